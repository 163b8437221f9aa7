/**
 * A strategy's options form, built from the JSON Schema the session's `strategy_catalog` gives
 * (`options_schema`, defaults included): booleans are checkboxes, integers and numbers number
 * inputs, enums selects, strings text inputs. Other kinds (objects, lists) are left to defaults.
 */

interface FieldBase {
  /** The option's name in `strategy_options`. */
  name: string;
  /** What the form calls it: the schema's title, or the name in words. */
  label: string;
  description?: string;
}

/** One input of the options form. */
export type OptionField = FieldBase &
  (
    | { kind: 'boolean'; defaultValue: boolean }
    | { kind: 'number'; integer: boolean; min?: number; max?: number; defaultValue?: number }
    | { kind: 'enum'; choices: string[]; defaultValue?: string }
    | { kind: 'text'; defaultValue?: string }
  );

/** What the form holds: a checkbox's state, or an input's text as typed. */
export type OptionValues = Record<string, string | boolean>;

type Schema = Record<string, unknown>;

/** The form's fields for an options schema, in the schema's order. */
export function optionFields(schema: Schema | undefined): OptionField[] {
  const properties = asRecord(schema?.properties);
  if (!properties) return [];
  const fields: OptionField[] = [];
  for (const [name, raw] of Object.entries(properties)) {
    const property = asRecord(raw);
    if (!property) continue;
    const field = fieldOf(name, property);
    if (field) fields.push(field);
  }
  return fields;
}

/** The form's starting values: what the user chose before (when it still fits the field), else the defaults. */
export function initialValues(fields: OptionField[], stored: Record<string, unknown> = {}): OptionValues {
  const values: OptionValues = {};
  for (const field of fields) {
    const previous = stored[field.name];
    values[field.name] = fits(field, previous) ? (previous as string | boolean) : defaultText(field);
  }
  return values;
}

/**
 * What to send as `strategy_options`: the options that differ from their defaults, as the schema
 * types them. A number is rounded and clamped into range; a number or text left empty, or a
 * number that does not parse, falls back to the default (and so is not sent).
 */
export function optionsToSend(fields: OptionField[], values: OptionValues): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const field of fields) {
    const value = fieldValue(field, values[field.name]);
    if (value !== undefined && value !== field.defaultValue) options[field.name] = value;
  }
  return options;
}

/** A number input's text once it loses focus: in range and whole when it must be, or the default when it does not parse. */
export function correctNumberText(field: Extract<OptionField, { kind: 'number' }>, text: string): string {
  const value = fieldValue(field, text);
  return value === undefined ? '' : String(value);
}

function fieldValue(field: OptionField, raw: string | boolean | undefined): unknown {
  switch (field.kind) {
    case 'boolean':
      return typeof raw === 'boolean' ? raw : field.defaultValue;
    case 'number': {
      const text = typeof raw === 'string' ? raw.trim() : '';
      const parsed = Number(text);
      if (text === '' || !Number.isFinite(parsed)) return field.defaultValue;
      let value = field.integer ? Math.round(parsed) : parsed;
      if (field.min !== undefined) value = Math.max(field.min, value);
      if (field.max !== undefined) value = Math.min(field.max, value);
      return value;
    }
    case 'enum':
      return typeof raw === 'string' && field.choices.includes(raw) ? raw : field.defaultValue;
    case 'text':
      return typeof raw === 'string' && raw !== '' ? raw : field.defaultValue;
    default: {
      const unexpected: never = field;
      return unexpected;
    }
  }
}

function fieldOf(name: string, raw: Schema): OptionField | undefined {
  const property = withoutNull(raw);
  const base: FieldBase = {
    name,
    label: typeof property.title === 'string' ? property.title : inWords(name),
    ...(typeof property.description === 'string' ? { description: property.description } : {}),
  };
  const fallback = property.default;
  const choices = enumChoices(property);
  if (choices) {
    return { ...base, kind: 'enum', choices, ...(typeof fallback === 'string' && choices.includes(fallback) ? { defaultValue: fallback } : {}) };
  }
  switch (typeOf(property)) {
    case 'boolean':
      return { ...base, kind: 'boolean', defaultValue: fallback === true };
    case 'integer':
    case 'number': {
      const integer = typeOf(property) === 'integer';
      const min = bound(property.minimum, property.exclusiveMinimum, integer ? 1 : 0);
      const max = bound(property.maximum, property.exclusiveMaximum, integer ? -1 : 0);
      return {
        ...base,
        kind: 'number',
        integer,
        ...(min === undefined ? {} : { min }),
        ...(max === undefined ? {} : { max }),
        ...(typeof fallback === 'number' ? { defaultValue: fallback } : {}),
      };
    }
    case 'string':
      return { ...base, kind: 'text', ...(typeof fallback === 'string' ? { defaultValue: fallback } : {}) };
    default:
      return undefined;
  }
}

/** A nullable option (`anyOf: [X, {type: "null"}]`, `type: [X, "null"]`) is shown as X; the outer title, description and default win. */
function withoutNull(property: Schema): Schema {
  const members = Array.isArray(property.anyOf) ? property.anyOf : Array.isArray(property.oneOf) ? property.oneOf : undefined;
  if (members) {
    const present = members.map(asRecord).filter((member): member is Schema => member !== undefined && member.type !== 'null');
    // A union of constants is an enum: leave it for enumChoices.
    if (present.length === 1) {
      const { anyOf: _anyOf, oneOf: _oneOf, ...outer } = property;
      return { ...present[0], ...outer };
    }
  }
  return property;
}

function typeOf(property: Schema): string | undefined {
  const type = property.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.find((entry): entry is string => typeof entry === 'string' && entry !== 'null');
  return undefined;
}

function enumChoices(property: Schema): string[] | undefined {
  if (Array.isArray(property.enum)) {
    const choices = property.enum.filter((entry): entry is string => typeof entry === 'string');
    return choices.length > 0 && choices.length === property.enum.filter((entry) => entry !== null).length ? choices : undefined;
  }
  const members = Array.isArray(property.anyOf) ? property.anyOf : Array.isArray(property.oneOf) ? property.oneOf : undefined;
  const constants = members?.map((member) => asRecord(member)?.const);
  if (constants?.length && constants.every((entry) => typeof entry === 'string')) return constants as string[];
  return undefined;
}

/** A usable bound: inclusive, or exclusive moved by `step` for integers; the "any safe integer" bounds zod writes are no bound. */
function bound(inclusive: unknown, exclusive: unknown, step: number): number | undefined {
  const value = typeof inclusive === 'number' ? inclusive : typeof exclusive === 'number' ? exclusive + step : undefined;
  return value === undefined || Math.abs(value) >= Number.MAX_SAFE_INTEGER ? undefined : value;
}

function fits(field: OptionField, value: unknown): boolean {
  switch (field.kind) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'number':
      return typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value));
    case 'enum':
      return typeof value === 'string' && field.choices.includes(value);
    case 'text':
      return typeof value === 'string';
    default: {
      const unexpected: never = field;
      return unexpected;
    }
  }
}

function defaultText(field: OptionField): string | boolean {
  if (field.kind === 'boolean') return field.defaultValue;
  return field.defaultValue === undefined ? '' : String(field.defaultValue);
}

/** "max_step_attempts" → "Max step attempts". */
function inWords(name: string): string {
  const words = name
    .replace(/[_-]+/g, ' ')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .trim()
    .toLowerCase();
  return words ? words[0]!.toUpperCase() + words.slice(1) : name;
}

function asRecord(value: unknown): Schema | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Schema) : undefined;
}
