/**
 * The part of jsdom the SVG sanitizer uses (files/svg.ts). jsdom's own type package declares the
 * whole browser DOM as globals for every file of the program, which the server must not see.
 */
declare module 'jsdom' {
  export class JSDOM {
    constructor(html?: string);
    readonly window: unknown;
  }
}
