// pg ships these helpers without types; the projection batcher uses two of them.
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): unknown; escapeLiteral(value: string): string };
  export default utils;
}
