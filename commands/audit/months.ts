/** the months (UTC, first day) a range touches, oldest first */
export const monthsOf = (since: Date, until: Date): Date[] => {
  const months: Date[] = [];
  for (let m = Date.UTC(since.getUTCFullYear(), since.getUTCMonth(), 1); m < until.getTime();) {
    months.push(new Date(m));
    const d = new Date(m);
    m = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
  return months;
};

export const monthKey = (month: Date): string =>
  `${month.getUTCFullYear()}-${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
