/** The files vocabulary of spec 002 (File resource, file status table, thumbnail presets). */
export const BUCKETS = ['avatars', 'assets', 'documents', 'exports', 'modules'] as const;
export type Bucket = (typeof BUCKETS)[number];
export const isBucket = (value: string): value is Bucket => (BUCKETS as readonly string[]).includes(value);

/** what a client sees; a permanently deleted file is gone (404), never a status */
export const FILE_STATUSES = ['pending_scan', 'available', 'rejected', 'deleted'] as const;
export type FileStatus = (typeof FILE_STATUSES)[number];

export type ScanStatus = 'clean' | 'skipped';

/**
 * Thumbnail presets. The fixed boxes (icons, avatars, cards) are filled and centre-cropped; preview
 * and full keep the whole picture within their bounds and never enlarge it. icon_32 and card_300
 * are made when an image is released; the others on the first request, then kept.
 */
export interface Preset {
  width: number;
  /** null: automatic height (full_1200) */
  height: number | null;
  fit: 'cover' | 'inside';
  automatic: boolean;
}

export const PRESETS = {
  icon_32: { width: 32, height: 32, fit: 'cover', automatic: true },
  avatar_64: { width: 64, height: 64, fit: 'cover', automatic: false },
  card_300: { width: 300, height: 200, fit: 'cover', automatic: true },
  preview_600: { width: 600, height: 400, fit: 'inside', automatic: false },
  full_1200: { width: 1200, height: null, fit: 'inside', automatic: false },
} as const satisfies Record<string, Preset>;
export type PresetName = keyof typeof PRESETS;
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];
export const isPreset = (value: string): value is PresetName => Object.hasOwn(PRESETS, value);
export const AUTOMATIC_PRESETS = PRESET_NAMES.filter((p) => PRESETS[p].automatic);

/** why a staged file was not released */
export const REJECTION_REASONS = [
  'infected',
  'unscannable',
  'encrypted',
  'too-large',
  'staging-expired',
  'upload-missing',
] as const;
export type RejectionReason = (typeof REJECTION_REASONS)[number];

/** why a file left the store for good */
export type PurgeReason = 'requested' | 'trash-expired' | 'orphaned';

export const META_MAX_BYTES = 4096;
export const ORIGINAL_NAME_MAX_BYTES = 1024;
