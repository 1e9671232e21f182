import { isPreset, type PresetName } from './constants';

/**
 * Signed download links: {root_url}/v1/files/<id>/content?tenant=…&variant=…&expires=…&signature=…
 * The signature (infra/security/signed-links.ts) covers the tenant, the file, the variant
 * (original or a thumbnail preset) and the expiry, so a link opens exactly one file of one tenant
 * until it expires, and changing any part of it breaks the signature. The platform serves the bytes
 * itself (read-api), so every store answers with the same headers and a deleted file's links stop
 * working at once (docs/decisions.md, Files).
 */
export const LINK_KEY_PURPOSE = 'files.links.v1';
/** GET /files/:id/url: ttlSeconds default and maximum (spec 002); other links last the default */
export const DEFAULT_LINK_TTL_SECONDS = 300;
export const MAX_LINK_TTL_SECONDS = 86_400;
/** the first line of what is signed: a link of another kind never verifies as a file link */
export const LINK_SCHEME = 'files.link.v1';

export type LinkVariant = 'original' | PresetName;

export interface Link {
  tenantId: string;
  fileId: string;
  variant: LinkVariant;
  /** epoch seconds */
  expires: number;
}

/** makes signed links for a file's variants */
export type Linker = (fileId: string, variant: LinkVariant) => string;

/** what the signature covers besides the expiry */
export const linkFields = (link: Link): string[] => [link.tenantId, link.fileId, link.variant];

export const isLinkVariant = (value: string): value is LinkVariant => value === 'original' || isPreset(value);

export const linkUrl = (rootUrl: string, link: Link, signature: string): string => {
  const query = new URLSearchParams({
    tenant: link.tenantId,
    variant: link.variant,
    expires: String(link.expires),
    signature,
  });
  return `${rootUrl}/v1/files/${encodeURIComponent(link.fileId)}/content?${query.toString()}`;
};

/** a Linker of one tenant's files, every link expiring at `expires`, signed by `sign` */
export const linkerOf =
  (
    sign: (fields: readonly string[], expires: number) => string,
    rootUrl: string,
    tenantId: string,
    expires: number,
  ): Linker =>
  (fileId, variant) => {
    const link = { tenantId, fileId, variant, expires };
    return linkUrl(rootUrl, link, sign(linkFields(link), expires));
  };
