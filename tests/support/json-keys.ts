/**
 * The keys that occur more than once in one object of a JSON text, as dotted paths. JSON.parse
 * keeps the last of them silently, so a log line with a key twice reads differently in each tool.
 */
export const duplicateKeys = (json: string): string[] => {
  JSON.parse(json); // well-formed first: the scan below trusts the structure
  const found: string[] = [];
  let i = 0;
  const skipSpace = () => {
    while (/\s/.test(json[i] ?? '')) i += 1;
  };
  const readString = (): string => {
    const start = i;
    i += 1;
    while (json[i] !== '"') i += json[i] === '\\' ? 2 : 1;
    i += 1;
    return JSON.parse(json.slice(start, i)) as string;
  };
  const readValue = (path: string): void => {
    skipSpace();
    const open = json[i];
    if (open === '{' || open === '[') {
      i += 1;
      const keys = new Set<string>();
      skipSpace();
      while (json[i] !== '}' && json[i] !== ']') {
        if (open === '{') {
          const key = readString();
          if (keys.has(key)) found.push(`${path}${key}`);
          keys.add(key);
          skipSpace();
          i += 1; // the colon
          readValue(`${path}${key}.`);
        } else {
          readValue(path);
        }
        skipSpace();
        if (json[i] === ',') i += 1;
        skipSpace();
      }
      i += 1;
      return;
    }
    if (open === '"') {
      readString();
      return;
    }
    while (i < json.length && !/[,}\]\s]/.test(json[i]!)) i += 1; // a number, true, false or null
  };
  readValue('');
  return found;
};
