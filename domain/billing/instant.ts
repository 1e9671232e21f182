/**
 * Instants as ISO 8601 UTC strings (the form toISOString writes), turned into epoch milliseconds
 * and back by calendar arithmetic alone (H. Hinnant's days-from-civil), so deciders do date
 * arithmetic without reading or building a clock. A string of another form is a bug: it throws.
 */
const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?Z$/;
const DAY_MS = 86_400_000;

const daysFromCivil = (y0: number, m: number, d: number): number => {
  const y = m <= 2 ? y0 - 1 : y0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
};

const civilFromDays = (z0: number): [number, number, number] => {
  const z = z0 + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
};

export const toMs = (iso: string): number => {
  const m = ISO.exec(iso);
  if (!m) throw new Error(`not an ISO 8601 UTC instant: ${iso}`);
  const [, y, mo, d, h, mi, s, frac] = m;
  return (
    daysFromCivil(Number(y), Number(mo), Number(d)) * DAY_MS +
    ((Number(h) * 60 + Number(mi)) * 60 + Number(s)) * 1000 +
    Number((frac ?? '0').padEnd(3, '0'))
  );
};

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

export const fromMs = (ms: number): string => {
  const days = Math.floor(ms / DAY_MS);
  const rest = ms - days * DAY_MS;
  const [y, m, d] = civilFromDays(days);
  const h = Math.floor(rest / 3_600_000);
  const mi = Math.floor((rest % 3_600_000) / 60_000);
  const s = Math.floor((rest % 60_000) / 1000);
  return `${pad(y, 4)}-${pad(m)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}.${pad(rest % 1000, 3)}Z`;
};

/** the last day of a month (1-12) */
export const daysInMonth = (y: number, m: number): number =>
  daysFromCivil(m === 12 ? y + 1 : y, m === 12 ? 1 : m + 1, 1) - daysFromCivil(y, m, 1);

export const civilOf = (iso: string): [number, number, number] => civilFromDays(Math.floor(toMs(iso) / DAY_MS));
