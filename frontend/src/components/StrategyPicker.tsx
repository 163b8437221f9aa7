import type { StrategyInfo } from '@stepwise/shared-types';
import { useId } from 'react';
import { correctNumberText, type OptionField, type OptionValues } from '../lib/strategy-options.ts';

export interface StrategyPickerProps {
  strategies: StrategyInfo[];
  selected: StrategyInfo;
  fields: OptionField[];
  values: OptionValues;
  onSelect: (name: string) => void;
  onChange: (name: string, value: string | boolean) => void;
}

/** Which strategy the next run uses (its description below), and that strategy's options. */
export function StrategyPicker({ strategies, selected, fields, values, onSelect, onChange }: StrategyPickerProps) {
  const descriptionId = useId();
  return (
    <div className="strategy-picker">
      <label className="strategy-select">
        <span>Strategy</span>
        <select value={selected.name} title={selected.description} aria-describedby={descriptionId} onChange={(event) => onSelect(event.target.value)}>
          {strategies.map((strategy) => (
            <option key={strategy.name} value={strategy.name} title={strategy.description}>
              {strategy.label}
            </option>
          ))}
        </select>
      </label>
      {fields.length > 0 && (
        <fieldset className="strategy-options">
          <legend className="visually-hidden">Options of {selected.label}</legend>
          {fields.map((field) => (
            <OptionInput key={field.name} field={field} value={values[field.name]} onChange={(value) => onChange(field.name, value)} />
          ))}
        </fieldset>
      )}
      <p className="strategy-description" id={descriptionId}>
        {selected.description}
      </p>
    </div>
  );
}

/** One option: a checkbox, a number, a choice or a text, as its schema says. */
function OptionInput({ field, value, onChange }: { field: OptionField; value: string | boolean | undefined; onChange: (value: string | boolean) => void }) {
  const title = field.description;
  switch (field.kind) {
    case 'boolean':
      return (
        <label className="strategy-option" title={title}>
          <input type="checkbox" checked={value === true} onChange={(event) => onChange(event.target.checked)} />
          <span>{field.label}</span>
        </label>
      );
    case 'number':
      return (
        <label className="strategy-option" title={title}>
          <span>{field.label}</span>
          <input
            type="number"
            inputMode={field.integer ? 'numeric' : 'decimal'}
            step={field.integer ? 1 : 'any'}
            {...(field.min === undefined ? {} : { min: field.min })}
            {...(field.max === undefined ? {} : { max: field.max })}
            value={typeof value === 'string' ? value : ''}
            onChange={(event) => onChange(event.target.value)}
            onBlur={(event) => onChange(correctNumberText(field, event.target.value))}
          />
        </label>
      );
    case 'enum':
      return (
        <label className="strategy-option" title={title}>
          <span>{field.label}</span>
          <select value={typeof value === 'string' ? value : ''} onChange={(event) => onChange(event.target.value)}>
            {field.defaultValue === undefined && <option value="">(default)</option>}
            {field.choices.map((choice) => (
              <option key={choice} value={choice}>
                {choice.replace(/_/g, ' ')}
              </option>
            ))}
          </select>
        </label>
      );
    case 'text':
      return (
        <label className="strategy-option" title={title}>
          <span>{field.label}</span>
          <input type="text" value={typeof value === 'string' ? value : ''} onChange={(event) => onChange(event.target.value)} />
        </label>
      );
    default: {
      const unexpected: never = field;
      return unexpected;
    }
  }
}
