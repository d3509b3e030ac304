/** Splits a comma-separated setting, dropping empty parts. */
export function splitList(text: string): string[] {
  return text.split(',').map((part) => part.trim()).filter((part) => part !== '');
}
