import { evaluateExpression } from '../../tools/expression.ts';

/**
 * Arithmetic as the demo model reads it in a request: symbols, words ("12 times 7", "15% of 240"),
 * and chained calculations ("First compute 12*7, then add 15, divide by 3").
 */

/** One link of a chained calculation: the first is an expression, the others an operation on the running value. */
export interface ChainLink {
  operator?: '+' | '-' | '*' | '/';
  operand?: string;
  expression?: string;
  words: string;
}

const EXPRESSION_PART = /(?:\b(?:sqrt|abs|sin|cos|tan|ln|log|exp|floor|ceil|round|min|max|pow|pi)\b|\d+(?:\.\d+)?|[-+*/%^×÷(),]|\s)+/gi;

const NUMBER_WORDS: Record<string, string> = {
  zero: '0',
  one: '1',
  two: '2',
  three: '3',
  four: '4',
  five: '5',
  six: '6',
  seven: '7',
  eight: '8',
  nine: '9',
  ten: '10',
  eleven: '11',
  twelve: '12',
  thirteen: '13',
  fourteen: '14',
  fifteen: '15',
  sixteen: '16',
  seventeen: '17',
  eighteen: '18',
  nineteen: '19',
  twenty: '20',
  thirty: '30',
  forty: '40',
  fifty: '50',
  sixty: '60',
  seventy: '70',
  eighty: '80',
  ninety: '90',
  hundred: '100',
  thousand: '1000',
};
const N = '(-?\\d+(?:\\.\\d+)?)';
/** Between two operands: after a number or a closing parenthesis, before a number or an opening one. */
const between = (words: string) => new RegExp(`(?<=[\\d)])\\s*\\b(?:${words})\\b\\s*(?=[-\\d(])`, 'gi');

/**
 * Arithmetic as people write it, in symbols: percentages ("15% of 240"), operations in words
 * ("12 times 7", "divide 10 by 4", "the sum of 3 and 4", "square root of 16"), numbers in words
 * next to them ("seven times eight").
 */
export function arithmeticOf(text: string): string {
  let out = text.replace(/[×]/g, '*').replace(/[÷]/g, '/');
  const words = Object.keys(NUMBER_WORDS).join('|');
  const operation =
    'times|plus|minus|divided|multiplied|over|percent|squared|cubed|power|root|sum|product|difference|add|subtract|multiply|divide|by|and|of|from|to';
  // Numbers in words only where they are operands: next to an operation word or a symbol.
  out = out.replace(
    new RegExp(`\\b(${words})\\b(?=\\s*(?:[-+*/^%]|\\b(?:${operation})\\b))|(?<=(?:[-+*/^%(]|\\b(?:${operation})\\b)\\s*)\\b(${words})\\b`, 'gi'),
    (match) => NUMBER_WORDS[match.toLowerCase()] ?? match,
  );
  const rules: Array<[RegExp, string]> = [
    [new RegExp(`${N}\\s*(?:%|\\s+percent|\\s+per\\s*cent)\\s+of\\s+${N}`, 'gi'), '($1*$2/100)'],
    [new RegExp(`\\bsquare\\s+root\\s+of\\s+${N}`, 'gi'), 'sqrt($1)'],
    [new RegExp(`\\b(?:the\\s+)?sum\\s+of\\s+${N}\\s+and\\s+${N}`, 'gi'), '($1+$2)'],
    [new RegExp(`\\b(?:the\\s+)?product\\s+of\\s+${N}\\s+and\\s+${N}`, 'gi'), '($1*$2)'],
    [new RegExp(`\\b(?:the\\s+)?difference\\s+between\\s+${N}\\s+and\\s+${N}`, 'gi'), '($1-$2)'],
    [new RegExp(`\\bmultiply\\s+${N}\\s+(?:by|and|with)\\s+${N}`, 'gi'), '($1*$2)'],
    [new RegExp(`\\bdivide\\s+${N}\\s+by\\s+${N}`, 'gi'), '($1/$2)'],
    [new RegExp(`\\badd\\s+${N}\\s+(?:and|to)\\s+${N}`, 'gi'), '($1+$2)'],
    [new RegExp(`\\bsubtract\\s+${N}\\s+from\\s+${N}`, 'gi'), '($2-$1)'],
    [new RegExp(`${N}\\s+squared\\b`, 'gi'), '$1^2'],
    [new RegExp(`${N}\\s+cubed\\b`, 'gi'), '$1^3'],
    [between('times|multiplied\\s+by|x'), ' * '],
    [between('divided\\s+by|over'), ' / '],
    [between('plus'), ' + '],
    [between('minus'), ' - '],
    [between('to\\s+the\\s+power\\s+of|raised\\s+to(?:\\s+the\\s+power\\s+of)?'), ' ^ '],
  ];
  for (const [pattern, replacement] of rules) out = out.replace(pattern, replacement);
  return out;
}

/** The longest run of the text that looks like arithmetic: digits with at least one operator or function. */
export function findExpression(raw: string): string | undefined {
  const text = arithmeticOf(raw);
  const candidates = (text.match(EXPRESSION_PART) ?? [])
    .map((candidate) =>
      candidate
        .trim()
        .replace(/^[,)]+|[,(]+$/g, '')
        .trim(),
    )
    .filter((candidate) => /\d/.test(candidate) && /[-+*/%^×÷]|[a-z]\(/i.test(candidate) && !/^[-+]?\d+(\.\d+)?$/.test(candidate));
  return candidates.sort((a, b) => b.length - a.length)[0];
}

const OPERATIONS: { pattern: RegExp; operator: ChainLink['operator'] }[] = [
  { pattern: /\b(?:add|plus)\s+(-?\d+(?:\.\d+)?)/i, operator: '+' },
  { pattern: /\b(?:subtract|minus|take away)\s+(-?\d+(?:\.\d+)?)/i, operator: '-' },
  { pattern: /\b(?:multiply|times)(?:\s+(?:it|that|the result))?(?:\s+by)?\s+(-?\d+(?:\.\d+)?)/i, operator: '*' },
  { pattern: /\b(?:divide|divided)(?:\s+(?:it|that|the result))?(?:\s+by)?\s+(-?\d+(?:\.\d+)?)/i, operator: '/' },
];

/**
 * A chained calculation: "First compute 12*7, then add 15, divide by 3, subtract 4" is an
 * expression followed by operations on the running value, each one calculator call of its own.
 */
export function findChain(raw: string): ChainLink[] {
  const text = arithmeticOf(raw);
  const parts = text
    .split(/,|;|\bthen\b|\band\b/i)
    .map((part) => part.trim())
    .filter(Boolean);
  const chain: ChainLink[] = [];
  for (const part of parts) {
    if (chain.length === 0) {
      const expression = findExpression(part);
      if (expression) chain.push({ expression, words: part });
      continue;
    }
    const operation = OPERATIONS.map(({ pattern, operator }) => ({ match: pattern.exec(part), operator })).find(({ match }) => match);
    if (operation?.match) chain.push({ operator: operation.operator!, operand: operation.match[1]!, words: part.replace(/^(?:then|and)\s+/i, '') });
  }
  if (chain.length > 1) return chain;
  const whole = findExpression(text);
  return whole ? [{ expression: whole, words: whole }] : [];
}

/** A whole chain as one expression: "First compute 12*7, then add 15, divide by 3" is `((12*7) + 15) / 3`. */
export function chainExpression(chain: ChainLink[]): string | undefined {
  const [first, ...rest] = chain;
  if (!first?.expression) return undefined;
  let expression = first.expression;
  for (const link of rest) expression = `(${expression}) ${link.operator} ${link.operand}`;
  return expression;
}

/** The chain's result, computed here (as the calculator computes it): the demo model checks an answer against it, never guesses. */
export function chainResult(chain: ChainLink[]): string | undefined {
  const expression = chainExpression(chain);
  if (!expression) return undefined;
  try {
    return String(evaluateExpression(expression));
  } catch {
    return undefined;
  }
}

/** The expression of link `index`, applied to the running value the calculator gave for the one before. */
export function linkExpression(chain: ChainLink[], calculations: string[], index: number): string | undefined {
  const link = chain[index];
  if (!link) return undefined;
  if (link.expression) return link.expression;
  return `${calculations[index - 1]} ${link.operator} ${link.operand}`;
}
