// Codec names and valid levels, apart from the codecs themselves so that
// config validation does not load the native zstd module.
export type CodecName = 'zstd' | 'gzip' | 'none';

/** Valid levels per codec, for config validation. */
export const CODEC_LEVELS: Record<CodecName, { min: number; max: number }> = {
  zstd: { min: 1, max: 22 },
  gzip: { min: 0, max: 9 },
  none: { min: 0, max: 22 },
};
