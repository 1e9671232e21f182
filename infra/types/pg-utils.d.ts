// pg ships these helpers without types; the SQL inliner (infra/postgres/inline.ts) uses prepareValue for arrays.
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): unknown };
  export default utils;
}
