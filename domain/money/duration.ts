/**
 * A hold's ttl: "72h", "90m", "1h30m", "3600s", "2d" or ISO 8601 ("PT72H", "P2DT3H"). Returns
 * milliseconds, or null when the text is not a duration.
 */
const SIMPLE = /^(?:(\d{1,6})d)?(?:(\d{1,7})h)?(?:(\d{1,9})m)?(?:(\d{1,10})s)?$/i;
const ISO = /^P(?:(\d{1,6})D)?(?:T(?:(\d{1,7})H)?(?:(\d{1,9})M)?(?:(\d{1,10})S)?)?$/i;

/**
 * The forms parseDuration reads, as one JSON Schema pattern (no flags: both cases spelled out), for
 * the documents; the range (1 s to the hold limit) is the handler's check.
 */
export const DURATION_PATTERN =
  '^(?![pP][tT]?$)(?!.*[tT]$)(?=.)(?:(?:\\d{1,6}[dD])?(?:\\d{1,7}[hH])?(?:\\d{1,9}[mM])?(?:\\d{1,10}[sS])?|[pP](?:\\d{1,6}[dD])?(?:[tT](?:\\d{1,7}[hH])?(?:\\d{1,9}[mM])?(?:\\d{1,10}[sS])?)?)$';

export const parseDuration = (text: string): number | null => {
  const m = SIMPLE.exec(text) ?? ISO.exec(text);
  if (!m || text === '' || /^P(T)?$/i.test(text) || /T$/i.test(text)) return null;
  const [d, h, min, s] = m.slice(1).map((v) => Number(v ?? 0)) as [number, number, number, number];
  return (((d * 24 + h) * 60 + min) * 60 + s) * 1000;
};
