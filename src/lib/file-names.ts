/** Keeps a display name safe: no path, no control characters, at most 255 characters. */
export function safeFileName(raw: string): string {
  const base = raw.split(/[/\\]/).pop() ?? '';
  // Controls, format characters (bidi overrides that turn "gnp.exe" into "exe.png", zero-width
  // marks) and line separators have no place in a name shown to people or put in a header.
  const printable = [...base].filter((ch) => !/[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029]/u.test(ch));
  const cleaned = printable.slice(0, 255).join('').trim();
  return cleaned === '' || cleaned === '.' || cleaned === '..' ? 'file' : cleaned;
}
