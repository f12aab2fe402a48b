import { RE2JS } from 're2js';

/**
 * Patterns from callers run on RE2 (re2js), never on the backtracking RegExp: text items'
 * `constraints.pattern` and the patterns in structured items' JSON Schemas go through the one
 * helper below (`compileLinearRegExp`).
 *
 * Why: the pattern comes from an API caller and the value from the portal's anonymous client, so a
 * pattern such as `(a+)+$` on a crafted value would let anyone stall the server (ReDoS). Rejecting
 * "dangerous" patterns by inspection is a heuristic that known cases slip through; RE2's matching
 * time is linear in the value whatever the pattern, so it is safe by construction.
 *
 * Syntax is JavaScript's in unicode mode (the same pattern drives the browser's `pattern`
 * attribute), translated for RE2. Backreferences and lookaround need backtracking and are refused
 * when the pattern is defined; so is what RE2 cannot express (`\p{Script=…}`, repetition counts
 * over 1,000). RE2's `.` also matches `\r` and its `\s` is ASCII white space only.
 *
 * Test mode's synthetic answers need a value a pattern accepts: the sampler at the end parses the
 * pattern into a Thompson NFA and searches it breadth-first; what it finds is checked with RE2.
 */

/** Longest pattern accepted (characters). */
export const MAX_PATTERN_LENGTH = 500;
/** Largest NFA the sampler builds (counted repetitions are expanded); beyond it, no sample. */
export const MAX_PATTERN_STATES = 600;
/** Longest value checked against a pattern (code points); longer values fail the pattern constraint. */
export const MAX_PATTERN_VALUE_LENGTH = 2000;

type Assertion = 'start' | 'end' | 'word' | 'not_word';
type CharTest = (ch: string) => boolean;

type Node =
  | { kind: 'char'; test: CharTest }
  | { kind: 'assert'; assertion: Assertion }
  | { kind: 'seq'; items: Node[] }
  | { kind: 'alt'; options: Node[] }
  | { kind: 'repeat'; node: Node; min: number; max: number };

type State =
  | { op: 'char'; test: CharTest; out: number }
  | { op: 'split'; out: number; out1: number }
  | { op: 'assert'; assertion: Assertion; out: number }
  | { op: 'match' };

export interface CompiledPattern {
  readonly source: string;
  readonly re2: RE2JS;
}

export type PatternCompilation = { ok: true; pattern: CompiledPattern } | { ok: false; message: string };

/** A pattern RE2 cannot run in linear time, or at all; the message says what to change. */
export class UnsupportedPattern extends Error {}

/** Backreferences and lookaround, found in JavaScript syntax (translation would hide `\k<…>`). */
function backtrackingProblem(source: string): string | undefined {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') {
      const next = source[i + 1] ?? '';
      if (!inClass && (next === 'k' || (next >= '1' && next <= '9'))) {
        return 'backreferences are not supported';
      }
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') inClass = true;
    else if (c === '(' && /^\(\?(?:=|!|<=|<!)/.test(source.slice(i, i + 4))) {
      return 'lookahead and lookbehind are not supported';
    }
  }
  return undefined;
}

/**
 * The one translation of a JavaScript pattern for RE2, shared by text patterns and JSON Schemas.
 * Throws `UnsupportedPattern` for what needs backtracking or what RE2 refuses.
 */
export function compileLinearRegExp(source: string): RE2JS {
  const problem = backtrackingProblem(source);
  if (problem) throw new UnsupportedPattern(problem);
  try {
    return RE2JS.compile(RE2JS.translateRegExp(source));
  } catch (error) {
    const detail = error instanceof Error ? error.message.replace(/^error parsing regexp: /, '') : '';
    throw new UnsupportedPattern(`the linear-time engine cannot run it (${detail})`);
  }
}

/** Parses and compiles a pattern; a refusal says what to change. */
export function compilePattern(source: string): PatternCompilation {
  if (source.length > MAX_PATTERN_LENGTH) {
    return { ok: false, message: `pattern is longer than ${MAX_PATTERN_LENGTH} characters` };
  }
  try {
    new RegExp(source, 'u');
  } catch {
    return { ok: false, message: 'pattern is not a valid regular expression' };
  }
  try {
    return { ok: true, pattern: { source, re2: compileLinearRegExp(source) } };
  } catch (error) {
    if (error instanceof UnsupportedPattern) return { ok: false, message: `pattern: ${error.message}` };
    throw error;
  }
}

/** Whether the whole value matches (as `^(?:pattern)$`), on RE2: linear in the value. */
export function matchesPattern(pattern: CompiledPattern, value: string): boolean {
  return pattern.re2.testExact(value);
}

/** Compiled patterns by source: definitions are few, values many. */
const cache = new Map<string, PatternCompilation>();

export function cachedPattern(source: string): PatternCompilation {
  let compiled = cache.get(source);
  if (!compiled) {
    compiled = compilePattern(source);
    if (cache.size >= 500) cache.clear();
    cache.set(source, compiled);
  }
  return compiled;
}

// The sampler: a parser and Thompson NFA for generating values (matching is RE2's, above).

interface Automaton {
  readonly states: readonly State[];
  readonly start: number;
}

class PatternError extends Error {}

const SYNTAX = new Set(['|', ')', '*', '+', '?', '{']);

/** A one-code-point test by the native engine (anchored, unicode mode): cheap and exactly JS's meaning. */
function nativeTest(piece: string): CharTest {
  const re = new RegExp(`^(?:${piece})$`, 'u');
  return (ch) => re.test(ch);
}

class Parser {
  private pos = 0;
  constructor(private readonly chars: readonly string[]) {}

  parse(): Node {
    const node = this.alternation();
    if (this.pos < this.chars.length) throw new PatternError('unbalanced parenthesis');
    return node;
  }

  private peek(offset = 0): string | undefined {
    return this.chars[this.pos + offset];
  }

  private alternation(): Node {
    const options = [this.sequence()];
    while (this.peek() === '|') {
      this.pos++;
      options.push(this.sequence());
    }
    return options.length === 1 ? (options[0] as Node) : { kind: 'alt', options };
  }

  private sequence(): Node {
    const items: Node[] = [];
    while (this.pos < this.chars.length && this.peek() !== '|' && this.peek() !== ')') {
      items.push(this.quantified(this.atom()));
    }
    return { kind: 'seq', items };
  }

  private quantified(node: Node): Node {
    const c = this.peek();
    let min: number;
    let max: number;
    if (c === '*') [min, max] = [0, Infinity];
    else if (c === '+') [min, max] = [1, Infinity];
    else if (c === '?') [min, max] = [0, 1];
    else if (c === '{') {
      const rest = this.chars.slice(this.pos).join('');
      const m = /^\{(\d+)(,(\d*))?\}/.exec(rest);
      if (!m) throw new PatternError('malformed quantifier');
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      this.pos += [...m[0]].length - 1;
    } else return node;
    this.pos++;
    if (this.peek() === '?') this.pos++; // lazy or greedy: the same language for a whole-value match
    if (min > MAX_PATTERN_STATES || (max !== Infinity && max > MAX_PATTERN_STATES)) {
      throw new PatternError('a repetition count is too large');
    }
    return { kind: 'repeat', node, min, max };
  }

  private atom(): Node {
    const c = this.peek();
    if (c === undefined || SYNTAX.has(c)) throw new PatternError('nothing to repeat');
    this.pos++;
    if (c === '(') return this.group();
    if (c === '[') return { kind: 'char', test: nativeTest(`[${this.classBody()}]`) };
    if (c === '.') return { kind: 'char', test: nativeTest('.') };
    if (c === '^') return { kind: 'assert', assertion: 'start' };
    if (c === '$') return { kind: 'assert', assertion: 'end' };
    if (c === '\\') return this.escape();
    return { kind: 'char', test: (ch) => ch === c };
  }

  private group(): Node {
    if (this.peek() === '?') {
      const next = this.peek(1);
      if (next === ':') this.pos += 2;
      else if (next === '<' && this.peek(2) !== '=' && this.peek(2) !== '!') {
        while (this.peek() !== '>') this.pos++;
        this.pos++;
      } else {
        throw new PatternError('lookahead and lookbehind are not supported');
      }
    }
    const inner = this.alternation();
    if (this.peek() !== ')') throw new PatternError('unbalanced parenthesis');
    this.pos++;
    return inner;
  }

  /** The text between [ and ] (the opening bracket consumed), consuming the closing one. */
  private classBody(): string {
    let body = '';
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw new PatternError('unterminated character class');
      this.pos++;
      if (c === ']') return body;
      if (c === '\\') {
        const escaped = this.peek() ?? '';
        this.pos++;
        body += `\\${escaped}`;
        if ((escaped === 'p' || escaped === 'P' || escaped === 'u') && this.peek() === '{')
          body += this.braced();
      } else body += c;
    }
  }

  /** A `{…}` run (for \p{…} and \u{…}), consumed. */
  private braced(): string {
    let text = '';
    while (this.peek() !== undefined && this.peek() !== '}') text += this.chars[this.pos++] ?? '';
    this.pos++;
    return `${text}}`;
  }

  private escape(): Node {
    const c = this.peek();
    if (c === undefined) throw new PatternError('a pattern cannot end with a backslash');
    this.pos++;
    if (c === 'b') return { kind: 'assert', assertion: 'word' };
    if (c === 'B') return { kind: 'assert', assertion: 'not_word' };
    if ((c >= '1' && c <= '9') || c === 'k') throw new PatternError('backreferences are not supported');
    let piece = `\\${c}`;
    if ((c === 'p' || c === 'P' || c === 'u') && this.peek() === '{') piece += this.braced();
    else if (c === 'u') piece += this.take(4);
    else if (c === 'x') piece += this.take(2);
    else if (c === 'c') piece += this.take(1);
    return { kind: 'char', test: nativeTest(piece) };
  }

  private take(count: number): string {
    const text = this.chars.slice(this.pos, this.pos + count).join('');
    this.pos += count;
    return text;
  }
}

/** Thompson construction, back to front: each node compiles onto the state that follows it. */
class Builder {
  readonly states: State[] = [];

  private push(state: State): number {
    if (this.states.length >= MAX_PATTERN_STATES) {
      throw new PatternError(`the pattern is too complex (more than ${MAX_PATTERN_STATES} states)`);
    }
    this.states.push(state);
    return this.states.length - 1;
  }

  match(): number {
    return this.push({ op: 'match' });
  }

  compile(node: Node, next: number): number {
    switch (node.kind) {
      case 'char':
        return this.push({ op: 'char', test: node.test, out: next });
      case 'assert':
        return this.push({ op: 'assert', assertion: node.assertion, out: next });
      case 'seq':
        return node.items.reduceRight((after, item) => this.compile(item, after), next);
      case 'alt':
        return node.options
          .map((option) => this.compile(option, next))
          .reduceRight((rest, start) => this.push({ op: 'split', out: start, out1: rest }));
      case 'repeat': {
        let start = next;
        if (node.max === Infinity) {
          const loop = this.push({ op: 'split', out: -1, out1: next });
          const body = this.compile(node.node, loop);
          (this.states[loop] as { out: number }).out = body;
          start = loop;
        } else {
          for (let i = node.min; i < node.max; i++) {
            start = this.push({ op: 'split', out: this.compile(node.node, start), out1: next });
          }
        }
        for (let i = 0; i < node.min; i++) start = this.compile(node.node, start);
        return start;
      }
    }
  }
}

/** The pattern's NFA for the sampler, or undefined when the parser or the size bound refuses it. */
function automatonOf(source: string): Automaton | undefined {
  try {
    const tree = new Parser([...source]).parse();
    const builder = new Builder();
    const start = builder.compile(tree, builder.match());
    return { states: builder.states, start };
  } catch (error) {
    if (error instanceof PatternError) return undefined;
    throw error;
  }
}

/**
 * The shortest value the pattern accepts whose every character is drawn from a small sample
 * alphabet, or undefined (test mode's synthetic answers use it). Breadth-first over NFA state sets;
 * a candidate is returned only once RE2 accepts it.
 */
export function samplePatternValue(pattern: CompiledPattern, maxLength = 64): string | undefined {
  const automaton = automatonOf(pattern.source);
  if (!automaton) return undefined;
  // A few typical characters plus the pattern's own literals (so `cat|dog` can be spelled).
  const alphabet = [...new Set([...'aA0 -_.@#/:,+()xyzBC19', ...pattern.source])];
  const { states } = automaton;
  interface Frontier {
    set: number[];
    text: string;
  }
  const closure = (from: number[], text: string): number[] => {
    const chars = [...text];
    const out = new Set<number>();
    const stack = [...from];
    while (stack.length > 0) {
      const index = stack.pop() as number;
      if (out.has(index)) continue;
      out.add(index);
      const state = states[index] as State;
      if (state.op === 'split') stack.push(state.out1, state.out);
      // Word and end assertions depend on what follows: assume they hold; the result is re-checked.
      else if (state.op === 'assert' && (state.assertion !== 'start' || chars.length === 0))
        stack.push(state.out);
    }
    return [...out];
  };
  const seenSets = new Set<string>();
  let frontier: Frontier[] = [{ set: closure([automaton.start], ''), text: '' }];
  for (let length = 0; length <= maxLength && frontier.length > 0; length++) {
    for (const { set, text } of frontier) {
      if (set.some((i) => states[i]?.op === 'match') && matchesPattern(pattern, text)) return text;
    }
    const next: Frontier[] = [];
    for (const { set, text } of frontier) {
      for (const ch of alphabet) {
        const moved = set.flatMap((i) => {
          const state = states[i] as State;
          return state.op === 'char' && state.test(ch) ? [state.out] : [];
        });
        if (moved.length === 0) continue;
        const reached = closure(moved, text + ch);
        const signature = reached.sort((a, b) => a - b).join(',');
        if (seenSets.has(signature)) continue;
        seenSets.add(signature);
        next.push({ set: reached, text: text + ch });
      }
    }
    frontier = next.slice(0, 2000);
  }
  return undefined;
}
