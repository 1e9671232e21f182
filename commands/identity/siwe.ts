import { randomBytes } from 'node:crypto';
import { lazyImport } from '../../infra/runtime/lazy';
import { LIFETIMES } from '../../domain/identity/constants';
import { commonErrors } from '../../domain/shared/errors';
import type { Kernel } from '../../infra/kernel';
import { hashToken, safeEqual } from '../../infra/security/one-time-tokens';
import { SIWE_PROVIDER } from '../../domain/identity/providers';
import type { ExternalIdentity, LoginProvider } from './providers';
import { oneTimeTokens } from './repositories/one-time-tokens';

/**
 * Sign-In with Ethereum (EIP-4361). POST /auth/login/siwe hands out a nonce (single use, 10 minutes,
 * only its hash stored) and the parameters the message must carry; the wallet signs the message
 * with personal_sign (EIP-191); the callback checks domain, URI, version, chain id, nonce, issued-at,
 * expiration and not-before, recovers the signer (secp256k1 over keccak256) and requires it to be
 * the message's address. Externally owned accounts only (no EIP-1271 contract wallets).
 */
const SKEW_MS = 60_000;
const MAX_MESSAGE = 4096;
const NONCE = /^[a-f0-9]{32}$/;

const fail = (detail: string) => commonErrors.unauthorized(detail);

// viem costs every process ~300 ms of its start; only a SIWE sign-in needs it
const loadViem = lazyImport(async () => ({ ...(await import('viem')), ...(await import('viem/siwe')) }));
/** viem's isHex (strict): 0x and hex digits */
const isHex = (value: string): value is `0x${string}` => /^0x[0-9a-fA-F]*$/.test(value);

export const siweSettings = (kernel: Kernel) => ({
  domain: kernel.config.SIWE_DOMAIN ?? new URL(kernel.config.rootUrl).host,
  uri: kernel.config.rootUrl,
  chainIds: kernel.config.SIWE_CHAIN_IDS.split(',').map(Number),
});

/** checks a signed EIP-4361 message and consumes its nonce; the identity is the checksummed address */
export const verifySiwe = async (
  kernel: Kernel,
  input: { message?: string; signature?: string },
): Promise<ExternalIdentity> => {
  const { message, signature } = input;
  // a request without the two fields (or with a signature that is not 65 bytes of hex) is malformed: 400, not a failed sign-in
  const missing = [
    ...(typeof message !== 'string' || message.length > MAX_MESSAGE
      ? [
          {
            field: 'message',
            message: `an EIP-4361 message of at most ${MAX_MESSAGE} characters is required`,
            code: 'REQUIRED',
          },
        ]
      : []),
    ...(typeof signature !== 'string' || !isHex(signature) || signature.length !== 132
      ? [{ field: 'signature', message: 'a 65-byte hex signature (0x + 130 hex digits) is required', code: 'REQUIRED' }]
      : []),
  ];
  if (missing.length || typeof message !== 'string' || typeof signature !== 'string' || !isHex(signature))
    throw commonErrors.validation(missing, 'A signed EIP-4361 message and its 65-byte signature are required.');
  const settings = siweSettings(kernel);
  const { getAddress, isAddress, parseSiweMessage, recoverMessageAddress } = await loadViem();
  const m = parseSiweMessage(message);
  if (!m.address || !isAddress(m.address, { strict: false }) || !m.nonce || !m.uri || m.chainId === undefined)
    throw fail('The message is not an EIP-4361 message.');
  if (m.version !== '1') throw fail('Unsupported EIP-4361 version.');
  if (m.domain !== settings.domain) throw fail('The message is for another domain.');
  if (!URL.canParse(m.uri) || new URL(m.uri).host !== settings.domain)
    throw fail('The message URI is not of this domain.');
  if (!settings.chainIds.includes(m.chainId)) throw fail('The chain id is not accepted.');
  const now = kernel.clock.now().getTime();
  const issuedAt = m.issuedAt?.getTime();
  if (
    issuedAt === undefined ||
    Number.isNaN(issuedAt) ||
    issuedAt > now + SKEW_MS ||
    issuedAt < now - LIFETIMES.siweNonceMs - SKEW_MS
  )
    throw fail('The message was not issued now.');
  if (m.expirationTime && !(m.expirationTime.getTime() > now)) throw fail('The message has expired.');
  if (m.notBefore && !(m.notBefore.getTime() <= now + SKEW_MS)) throw fail('The message is not valid yet.');
  if (!NONCE.test(m.nonce)) throw fail('The nonce is unknown.');

  let signer: string;
  try {
    signer = await recoverMessageAddress({ message, signature });
  } catch {
    throw fail('The signature is not valid.');
  }
  const address = getAddress(m.address);
  if (signer !== address) throw fail('The signature is not of the message address.');

  // last: only a fully valid message burns the nonce (single use under concurrency: DELETE … RETURNING)
  const hash = hashToken(m.nonce);
  const row = await oneTimeTokens.take(kernel.db, 'siwe-nonce', hash);
  if (!row || !safeEqual(row.tokenHash, hash)) throw fail('The nonce is unknown or used.');
  if (row.expiresAt.getTime() <= now) throw fail('The nonce has expired.');
  return {
    providerId: 'siwe',
    providerType: 'wallet',
    externalId: address,
    email: '',
    emailVerified: false,
    displayName: `${address.slice(0, 6)}…${address.slice(-4)}`,
    firstName: '',
    lastName: '',
  };
};

export const siweProvider = (kernel: Kernel): LoginProvider => ({
  ...SIWE_PROVIDER,
  async start() {
    const settings = siweSettings(kernel);
    // EIP-4361: the nonce is at least 8 alphanumeric characters; 128 random bits in hex
    const nonce = randomBytes(16).toString('hex');
    const now = kernel.clock.now();
    const expiresAt = new Date(now.getTime() + LIFETIMES.siweNonceMs);
    await oneTimeTokens.insert(kernel.db, {
      tokenHash: hashToken(nonce),
      purpose: 'siwe-nonce',
      userId: null,
      tenantId: null,
      email: null,
      expiresAt,
      createdAt: now,
    });
    return {
      nonce,
      domain: settings.domain,
      uri: settings.uri,
      version: '1' as const,
      chainId: settings.chainIds[0]!,
      chainIds: settings.chainIds,
      statement: 'Sign in to the platform.',
      issuedAt: now.toISOString(),
      expirationTime: expiresAt.toISOString(),
    };
  },
  async complete(input) {
    return { identity: await verifySiwe(kernel, input), intent: { kind: 'login' } };
  },
});
