import { SEMVER } from '../modules/manifest';

/** semver 2.0.0 precedence (build metadata ignored); -1, 0 or 1 */
export const compareSemver = (a: string, b: string): number => {
  const pa = SEMVER.exec(a);
  const pb = SEMVER.exec(b);
  if (!pa || !pb) throw new Error(`not a semver: ${pa ? b : a}`);
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i]);
    if (d !== 0) return Math.sign(d);
  }
  const preA = prerelease(a);
  const preB = prerelease(b);
  if (preA === null || preB === null) return preA === preB ? 0 : preA === null ? 1 : -1;
  const x = preA.split('.');
  const y = preB.split('.');
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] === undefined) return -1;
    if (y[i] === undefined) return 1;
    const nx = /^\d+$/.test(x[i]!);
    const ny = /^\d+$/.test(y[i]!);
    if (nx && ny && Number(x[i]) !== Number(y[i])) return Math.sign(Number(x[i]) - Number(y[i]));
    if (nx !== ny) return nx ? -1 : 1;
    if (!nx && x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return 0;
};

const prerelease = (v: string): string | null => {
  const core = v.split('+')[0]!;
  const dash = core.indexOf('-');
  return dash < 0 ? null : core.slice(dash + 1);
};

export const majorOf = (v: string): number => Number(v.split('.')[0]);
