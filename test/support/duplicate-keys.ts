/**
 * The keys that appear twice in one object of a JSON text. JSON.parse keeps
 * the last silently, and so do most log pipelines: a log line must not have any.
 */
export function duplicateKeys(json: string): string[] {
  const found: string[] = [];
  const objects: (Set<string> | undefined)[] = [];
  let expectKey = false;
  for (let i = 0; i < json.length; i++) {
    const char = json[i];
    if (char === '"') {
      const end = stringEnd(json, i);
      const top = objects.at(-1);
      if (top && expectKey) {
        const key = json.slice(i + 1, end);
        if (top.has(key)) found.push(key);
        top.add(key);
        expectKey = false;
      }
      i = end;
    } else if (char === '{' || char === '[') {
      objects.push(char === '{' ? new Set() : undefined);
      expectKey = char === '{';
    } else if (char === '}' || char === ']') {
      objects.pop();
    } else if (char === ',') {
      expectKey = objects.at(-1) !== undefined;
    }
  }
  return found;
}

/** Index of the quote that closes the string opening at `start`. */
function stringEnd(json: string, start: number): number {
  let i = start + 1;
  while (i < json.length && json[i] !== '"') i += json[i] === '\\' ? 2 : 1;
  return i;
}
