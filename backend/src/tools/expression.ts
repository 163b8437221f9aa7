/** A safe arithmetic evaluator: a tokenizer and a precedence-climbing parser. Never evaluates code. */

export class ExpressionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExpressionError';
  }
}

const MAX_LENGTH = 2_000;
const MAX_DEPTH = 100;

const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E, tau: 2 * Math.PI };

const FUNCTIONS: Record<string, { arity: [number, number]; apply: (...args: number[]) => number }> = {
  sqrt: { arity: [1, 1], apply: Math.sqrt },
  cbrt: { arity: [1, 1], apply: Math.cbrt },
  abs: { arity: [1, 1], apply: Math.abs },
  sin: { arity: [1, 1], apply: Math.sin },
  cos: { arity: [1, 1], apply: Math.cos },
  tan: { arity: [1, 1], apply: Math.tan },
  asin: { arity: [1, 1], apply: Math.asin },
  acos: { arity: [1, 1], apply: Math.acos },
  atan: { arity: [1, 1], apply: Math.atan },
  ln: { arity: [1, 1], apply: Math.log },
  log: { arity: [1, 2], apply: (x, base) => (base === undefined ? Math.log10(x) : Math.log(x) / Math.log(base)) },
  log10: { arity: [1, 1], apply: Math.log10 },
  log2: { arity: [1, 1], apply: Math.log2 },
  exp: { arity: [1, 1], apply: Math.exp },
  floor: { arity: [1, 1], apply: Math.floor },
  ceil: { arity: [1, 1], apply: Math.ceil },
  round: { arity: [1, 1], apply: Math.round },
  trunc: { arity: [1, 1], apply: Math.trunc },
  sign: { arity: [1, 1], apply: Math.sign },
  pow: { arity: [2, 2], apply: Math.pow },
  min: { arity: [1, 100], apply: Math.min },
  max: { arity: [1, 100], apply: Math.max },
  hypot: { arity: [1, 100], apply: Math.hypot },
};

type Token =
  | { kind: 'number'; value: number; at: number }
  | { kind: 'name'; value: string; at: number }
  | { kind: 'operator'; value: '+' | '-' | '*' | '/' | '%' | '^'; at: number }
  | { kind: 'open' | 'close' | 'comma' | 'end'; at: number };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  while (index < source.length) {
    const char = source[index]!;
    if (/\s/.test(char)) {
      index++;
      continue;
    }
    const number = /^(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/.exec(source.slice(index));
    if (number) {
      tokens.push({ kind: 'number', value: Number(number[0]), at: index });
      index += number[0].length;
      continue;
    }
    const name = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(source.slice(index));
    if (name) {
      tokens.push({ kind: 'name', value: name[0].toLowerCase(), at: index });
      index += name[0].length;
      continue;
    }
    if (source.startsWith('**', index)) {
      tokens.push({ kind: 'operator', value: '^', at: index });
      index += 2;
      continue;
    }
    const operator = ({ '+': '+', '-': '-', '−': '-', '*': '*', '×': '*', '/': '/', '÷': '/', '%': '%', '^': '^' } as const)[char as '+'];
    if (operator) tokens.push({ kind: 'operator', value: operator, at: index });
    else if (char === '(') tokens.push({ kind: 'open', at: index });
    else if (char === ')') tokens.push({ kind: 'close', at: index });
    else if (char === ',') tokens.push({ kind: 'comma', at: index });
    else throw new ExpressionError(`Unexpected character "${char}" at position ${index + 1}`);
    index++;
  }
  tokens.push({ kind: 'end', at: source.length });
  return tokens;
}

const BINARY_PRECEDENCE = { '+': 1, '-': 1, '*': 2, '/': 2, '%': 2, '^': 4 } as const;
const UNARY_PRECEDENCE = 3;

class Parser {
  private position = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): number {
    const value = this.expression(0);
    const next = this.peek();
    if (next.kind !== 'end') throw new ExpressionError(`Unexpected ${describe(next)} at position ${next.at + 1}`);
    return value;
  }

  private peek(): Token {
    return this.tokens[this.position]!;
  }

  private next(): Token {
    return this.tokens[this.position++]!;
  }

  private expression(minPrecedence: number): number {
    if (++this.depth > MAX_DEPTH) throw new ExpressionError('Expression is nested too deeply');
    let left = this.unary();
    for (;;) {
      const token = this.peek();
      if (token.kind !== 'operator') break;
      const precedence = BINARY_PRECEDENCE[token.value];
      if (precedence < minPrecedence) break;
      this.next();
      // Power is right-associative: 2^3^2 = 2^9.
      const right = this.expression(token.value === '^' ? precedence : precedence + 1);
      left = applyBinary(token.value, left, right);
    }
    this.depth--;
    return left;
  }

  private unary(): number {
    const token = this.peek();
    if (token.kind === 'operator' && (token.value === '-' || token.value === '+')) {
      this.next();
      // Unary minus binds looser than power: -2^2 = -4.
      const operand = this.expression(UNARY_PRECEDENCE);
      return token.value === '-' ? -operand : operand;
    }
    return this.primary();
  }

  private primary(): number {
    const token = this.next();
    switch (token.kind) {
      case 'number':
        return token.value;
      case 'open': {
        const value = this.expression(0);
        this.expect('close', ')');
        return value;
      }
      case 'name':
        return this.name(token.value, token.at);
      default:
        throw new ExpressionError(token.kind === 'end' ? 'Expression ended unexpectedly' : `Unexpected ${describe(token)} at position ${token.at + 1}`);
    }
  }

  private name(name: string, at: number): number {
    // Own properties only: names like "constructor" must not reach Object.prototype.
    const fn = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
    if (fn && this.peek().kind === 'open') {
      this.next();
      const args = [this.expression(0)];
      while (this.peek().kind === 'comma') {
        this.next();
        args.push(this.expression(0));
      }
      this.expect('close', ')');
      const [least, most] = fn.arity;
      if (args.length < least || args.length > most) {
        throw new ExpressionError(`${name}() takes ${least === most ? least : `${least} to ${most}`} argument(s)`);
      }
      return fn.apply(...args);
    }
    const constant = Object.hasOwn(CONSTANTS, name) ? CONSTANTS[name] : undefined;
    if (constant !== undefined) return constant;
    throw new ExpressionError(fn ? `${name} is a function: write ${name}(…)` : `Unknown name "${name}" at position ${at + 1}`);
  }

  private expect(kind: 'close', text: string): void {
    const token = this.next();
    if (token.kind !== kind) throw new ExpressionError(`Expected "${text}" at position ${token.at + 1}`);
  }
}

function applyBinary(operator: keyof typeof BINARY_PRECEDENCE, left: number, right: number): number {
  switch (operator) {
    case '+':
      return left + right;
    case '-':
      return left - right;
    case '*':
      return left * right;
    case '/':
      if (right === 0) throw new ExpressionError('Division by zero');
      return left / right;
    case '%':
      if (right === 0) throw new ExpressionError('Modulo by zero');
      return left % right;
    case '^':
      return left ** right;
    default: {
      const unexpected: never = operator;
      throw new ExpressionError(`Unknown operator ${String(unexpected)}`);
    }
  }
}

function describe(token: Token): string {
  switch (token.kind) {
    case 'number':
      return `number ${token.value}`;
    case 'name':
      return `name "${token.value}"`;
    case 'operator':
      return `"${token.value}"`;
    case 'open':
      return '"("';
    case 'close':
      return '")"';
    case 'comma':
      return '","';
    case 'end':
      return 'end of expression';
  }
}

/** Evaluates an arithmetic expression; throws ExpressionError with a readable message when it is not one. */
export function evaluateExpression(source: string): number {
  if (source.length > MAX_LENGTH) throw new ExpressionError(`Expression is longer than ${MAX_LENGTH} characters`);
  if (!source.trim()) throw new ExpressionError('Expression is empty');
  const value = new Parser(tokenize(source)).parse();
  if (!Number.isFinite(value)) throw new ExpressionError('The result is not a finite number');
  // Twelve significant digits hide binary rounding noise: 0.1 + 0.2 is 0.3.
  const rounded = Number(value.toPrecision(12));
  return Object.is(rounded, -0) ? 0 : rounded;
}
