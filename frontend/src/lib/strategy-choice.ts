import type { OptionValues } from './strategy-options.ts';

/** The strategy a browser last chose, and the options it set for each strategy (as the form held them). */
export interface StrategyChoice {
  strategy?: string;
  options: Record<string, OptionValues>;
}

const KEY = 'stepwise.strategy';

/** Where the choice is kept: localStorage in the app, a stand-in in tests. */
export type ChoiceStorage = Pick<Storage, 'getItem' | 'setItem'>;

/** The choice this browser remembers; nothing when there is none, or it cannot be read. */
export function loadStrategyChoice(storage: ChoiceStorage | undefined = browserStorage()): StrategyChoice {
  try {
    const value: unknown = JSON.parse(storage?.getItem(KEY) ?? 'null');
    if (typeof value !== 'object' || value === null) return { options: {} };
    const { strategy, options } = value as { strategy?: unknown; options?: unknown };
    return {
      ...(typeof strategy === 'string' ? { strategy } : {}),
      options: typeof options === 'object' && options !== null && !Array.isArray(options) ? (options as Record<string, OptionValues>) : {},
    };
  } catch {
    return { options: {} };
  }
}

/** Remembers the choice; a browser that refuses (private mode, full storage) just forgets it. */
export function saveStrategyChoice(choice: StrategyChoice, storage: ChoiceStorage | undefined = browserStorage()): void {
  try {
    storage?.setItem(KEY, JSON.stringify(choice));
  } catch {
    // Nothing to do: the choice holds for this page only.
  }
}

function browserStorage(): ChoiceStorage | undefined {
  try {
    return typeof localStorage === 'undefined' ? undefined : localStorage;
  } catch {
    return undefined;
  }
}
