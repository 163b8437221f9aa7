/**
 * MCP elicitation in a chat: the server's form becomes one question in words, and the user's
 * answer (free text, `field: value` lines, or JSON) becomes the form's content.
 */

type PropertySchema = {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  enumNames?: string[];
  oneOf?: Array<{ const?: unknown; title?: string }>;
  items?: { enum?: unknown[]; anyOf?: Array<{ const?: unknown; title?: string }> };
  default?: unknown;
  format?: string;
};

export interface FormSchema {
  properties?: Record<string, PropertySchema>;
  required?: string[];
}

export type ElicitationAnswer =
  | { action: 'accept'; content: Record<string, unknown> }
  | { action: 'decline' }
  | { action: 'cancel' }
  | { action: 'retry'; problem: string };

const DECLINE = /^(decline|no|refuse|skip)$/i;
const CANCEL = /^cancel$/i;

/** The question shown to the user for a form. */
export function formQuestion(server: string, message: string, schema: FormSchema, problem?: string): string {
  const properties = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const lines = [`${server} asks: ${message}`];
  if (problem) lines.unshift(`${problem}. Please answer again.`);
  for (const [key, property] of properties) {
    const choices = choicesOf(property).map((choice) => (choice.title ? `${choice.value} = ${choice.title}` : String(choice.value)));
    const details = [
      property.type === 'array' ? 'list' : property.type,
      required.has(key) ? 'required' : 'optional',
      property.default !== undefined ? `default ${JSON.stringify(property.default)}` : undefined,
    ].filter(Boolean);
    const about = property.description ?? property.title;
    lines.push(`- ${key} (${details.join(', ')})${about ? `: ${about}` : ''}${choices.length ? ` [${choices.join(', ')}]` : ''}`);
  }
  if (properties.length === 1) lines.push('Answer with the value, or "decline".');
  else if (properties.length > 1) lines.push('Answer with "field: value" lines (or JSON); left-out fields take their defaults. Or answer "decline".');
  return lines.join('\n');
}

/** Reads the user's answer against the form. */
export function readFormAnswer(answer: string, schema: FormSchema): ElicitationAnswer {
  const text = answer.trim();
  if (DECLINE.test(text)) return { action: 'decline' };
  if (CANCEL.test(text)) return { action: 'cancel' };
  const properties = schema.properties ?? {};
  const keys = Object.keys(properties);
  const required = schema.required ?? [];

  let given = parseJsonObject(text) ?? parseFieldLines(text, keys);
  if (!given) {
    // Free text fills the one field there is, or the one that is required.
    const target = keys.length === 1 ? keys[0] : required.length === 1 ? required[0] : undefined;
    if (!target) return { action: 'retry', problem: `Please give the fields as "field: value" lines` };
    given = { [target]: text };
  }

  const content: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(given)) {
    const property = properties[key];
    if (!property) return { action: 'retry', problem: `There is no field "${key}"` };
    const value = coerce(raw, property);
    if (value === undefined) return { action: 'retry', problem: `"${String(raw)}" is not a valid ${key}` };
    content[key] = value;
  }
  for (const [key, property] of Object.entries(properties)) {
    if (content[key] === undefined && property.default !== undefined) content[key] = property.default;
  }
  const missing = required.filter((key) => content[key] === undefined || content[key] === '');
  if (missing.length > 0) return { action: 'retry', problem: `Missing ${missing.join(', ')}` };
  return { action: 'accept', content };
}

function choicesOf(property: PropertySchema): Array<{ value: unknown; title?: string | undefined }> {
  if (property.oneOf) return property.oneOf.map((option) => ({ value: option.const, title: option.title }));
  if (property.enum) return property.enum.map((value, index) => ({ value, title: property.enumNames?.[index] }));
  if (property.items?.anyOf) return property.items.anyOf.map((option) => ({ value: option.const, title: option.title }));
  if (property.items?.enum) return property.items.enum.map((value) => ({ value }));
  return [];
}

function coerce(raw: unknown, property: PropertySchema): unknown {
  if (property.type === 'array') {
    const items = Array.isArray(raw)
      ? raw
      : String(raw)
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean);
    const values = items.map((item) => pickChoice(item, property));
    return values.some((value) => value === undefined) ? undefined : values;
  }
  if (choicesOf(property).length > 0) return pickChoice(raw, property);
  switch (property.type) {
    case 'number':
    case 'integer': {
      const number = typeof raw === 'number' ? raw : Number(String(raw).trim());
      if (!Number.isFinite(number) || (property.type === 'integer' && !Number.isInteger(number))) return undefined;
      return number;
    }
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      const word = String(raw).trim().toLowerCase();
      if (['true', 'yes', 'y', '1', 'on'].includes(word)) return true;
      if (['false', 'no', 'n', '0', 'off'].includes(word)) return false;
      return undefined;
    }
    default:
      return typeof raw === 'string' ? raw : JSON.stringify(raw);
  }
}

/** Matches a choice by its value or its title, ignoring case. */
function pickChoice(raw: unknown, property: PropertySchema): unknown {
  const choices = choicesOf(property);
  if (choices.length === 0) return raw;
  const word = String(raw).trim().toLowerCase();
  return choices.find((choice) => String(choice.value).toLowerCase() === word || choice.title?.toLowerCase() === word)?.value;
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function parseFieldLines(text: string, keys: string[]): Record<string, unknown> | undefined {
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);
  const fields: Record<string, unknown> = {};
  for (const line of lines) {
    const match = /^([A-Za-z0-9_.-]+)\s*[:=]\s*(.*)$/.exec(line);
    if (!match || !keys.includes(match[1]!)) return undefined;
    fields[match[1]!] = match[2]!;
  }
  return lines.length > 0 ? fields : undefined;
}
