import { hashChain } from '../../domain/audit/chain';
import { sha256Hex } from '../../infra/security/digest';

/** The audit hash chain (domain/audit/chain.ts) with SHA-256: how the audit consumer links records and the verifier checks them. */
export { START } from '../../domain/audit/chain';
export { LINK_FIELDS } from '../../domain/audit/chain';
export type { ChainBreak, ChainedLink, ChainHead } from '../../domain/audit/chain';

export const { hashOf, chain, chainLinks, verifyPage } = hashChain(sha256Hex);
