import { hashChain } from '../../domain/audit/chain';
import { sha256Hex } from '../../infra/security/digest';

/** The audit hash chain (domain/audit/chain.ts) with SHA-256: how the audit consumer links records and the verifier checks them. */
export { START } from '../../domain/audit/chain';
export type { ChainBreak, ChainHead } from '../../domain/audit/chain';

export const { hashOf, chain, verifyPage } = hashChain(sha256Hex);
