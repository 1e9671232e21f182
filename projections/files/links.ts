import type { Link, Linker } from '../../domain/files/links';
import {
  DEFAULT_LINK_TTL_SECONDS,
  LINK_KEY_PURPOSE,
  LINK_SCHEME,
  linkerOf,
  linkFields,
} from '../../domain/files/links';
import type { Kernel } from '../../infra/kernel';
import type { LinkCheck } from '../../infra/security/signed-links';
import { linkSigner } from '../../infra/security/signed-links';

export interface ReadLinks {
  /** signed links of the tenant's files, valid ttlSeconds */
  linker(tenantId: string, ttlSeconds?: number): Linker;
  /** the expiry of a link made now with this lifetime, in epoch seconds */
  expiry(ttlSeconds: number): number;
  verify(link: Link, signature: string): LinkCheck;
}

/** the read side's signed links: the same key and scheme as the command side's (commands/files/context.ts) */
export const readLinks = (kernel: Kernel): ReadLinks => {
  const signer = linkSigner(kernel.engines.secrets.key(LINK_KEY_PURPOSE), LINK_SCHEME);
  const expiry = (ttlSeconds: number) => Math.floor(kernel.clock.now().getTime() / 1000) + ttlSeconds;
  return {
    linker: (tenantId, ttlSeconds = DEFAULT_LINK_TTL_SECONDS) =>
      linkerOf(signer.sign, kernel.config.rootUrl, tenantId, expiry(ttlSeconds)),
    expiry,
    verify: (link, signature) => signer.check(linkFields(link), link.expires, signature, kernel.clock.now().getTime()),
  };
};
