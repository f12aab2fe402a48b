/** Accent colours that keep text readable (WCAG AA 4.5:1) whatever colour an account picks. */

function channels(hex: string): [number, number, number] {
  const n = Number.parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

function luminance(rgb: readonly number[]): number {
  const [r = 0, g = 0, b = 0] = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

export function contrast(a: string, b: string): number {
  const [la, lb] = [luminance(channels(a)), luminance(channels(b))];
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

const hex = (rgb: readonly number[]) =>
  `#${rgb.map((c) => Math.round(c).toString(16).padStart(2, '0')).join('')}`;

/** The colour darkened step by step until it reads on white (links, focus rings, button fills). */
export function readableOnWhite(colour: string): string {
  let rgb = channels(colour);
  for (let i = 0; i < 40 && contrast(hex(rgb), '#ffffff') < 4.5; i++)
    rgb = [rgb[0] * 0.92, rgb[1] * 0.92, rgb[2] * 0.92];
  return hex(rgb);
}

/** CSS custom properties for an accent colour: the fill, and text that reads on it. */
export function accentVariables(colour: string): string {
  const fill = readableOnWhite(colour.toLowerCase());
  return `--accent:${fill};--accent-ink:#ffffff`;
}
