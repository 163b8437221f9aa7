import type { Delivery, McpServerStatus, StrategyInfo, ToolInfo } from '@stepwise/shared-types';
import { type FormEvent, useEffect, useId, useMemo, useRef, useState } from 'react';
import { loadStrategyChoice, saveStrategyChoice, type StrategyChoice } from '../lib/strategy-choice.ts';
import { initialValues, type OptionValues, optionFields, optionsToSend } from '../lib/strategy-options.ts';
import type { SendOptions } from '../lib/use-stepwise.ts';
import { AttachedFiles } from './AttachedFiles.tsx';
import { PaperclipIcon, SlidersIcon } from './Icons.tsx';
import { SendMenu } from './SendMenu.tsx';
import { StrategyPicker } from './StrategyPicker.tsx';
import { ToolPicker } from './ToolPicker.tsx';

export interface ComposerProps {
  busy: boolean;
  /** The run is parked: it waits for the answer to its question (or a stop). */
  parked?: boolean;
  stopping: boolean;
  connected: boolean;
  limits: { max_steps_default: number; max_steps_limit: number } | undefined;
  tools: ToolInfo[];
  mcpServers: McpServerStatus[];
  /** The session's strategy catalog: a picker shows when it offers more than one. */
  strategies: StrategyInfo[];
  /** The question the agent waits on: the box then takes the answer. */
  question: string | undefined;
  onAttach: (files: File[]) => void;
  /** Files attached since the last message: they go with the next one. */
  attached?: string[];
  onDetach?: (name: string) => void;
  onSend: (content: string, options: SendOptions) => boolean;
  onAnswer: (answer: string) => boolean;
  /** True while an agent run works (a message then steers it); busy without one, a plain answer streams. */
  runActive?: boolean;
  /** A message while busy: it steers the run (or waits for it, or interrupts it); a plain answer's is queued. */
  onSteer?: (content: string, delivery: Delivery, options: SendOptions) => boolean;
  onStop: () => void;
  /** The chat has started (it has turns): the options fold to their one-line summary on every screen. */
  started?: boolean;
  /** The chat's last agent run (a reopened chat): the picker goes on with its strategy and options. */
  lastRun?: { sessionId: string; strategy: string; options?: Record<string, unknown> } | undefined;
}

/** Clamps a typed value into the allowed range; what is sent is always valid. */
export function correctMaxSteps(value: string, fallback: number, limit: number): number {
  const number = Math.round(Number(value));
  if (!Number.isFinite(number) || value.trim() === '') return fallback;
  return Math.min(limit, Math.max(1, number));
}

/**
 * The message box with the agent controls (Agent mode, Max iterations, tools; folded behind a
 * toggle on narrow screens), Send; while a run works, Steer (its menu: queue, interrupt) and Stop.
 * While the agent asks something, the box takes the answer.
 */
export function Composer(props: ComposerProps) {
  const {
    busy,
    parked,
    stopping,
    connected,
    limits,
    tools,
    mcpServers,
    strategies,
    question,
    started,
    runActive,
    onAttach,
    onSend,
    onAnswer,
    onSteer,
    onStop,
  } = props;
  const attached = props.attached ?? [];
  const onDetach = props.onDetach ?? (() => {});
  const fileInput = useRef<HTMLInputElement>(null);
  const textarea = useRef<HTMLTextAreaElement>(null);
  const optionsId = useId();
  const defaultSteps = limits?.max_steps_default ?? 10;
  const limit = limits?.max_steps_limit ?? 50;
  const [content, setContent] = useState('');
  const [answer, setAnswer] = useState('');
  const [agentMode, setAgentMode] = useState(true);
  const [maxSteps, setMaxSteps] = useState(String(defaultSteps));
  const [enabled, setEnabled] = useState<Set<string> | undefined>(undefined);
  const [optionsOpen, setOptionsOpen] = useState(false);
  // The strategy and its options are remembered per browser.
  const [choice, setChoice] = useState<StrategyChoice>(() => loadStrategyChoice());
  const offered = strategies.length > 1;
  const strategy = strategies.find((entry) => entry.name === choice.strategy) ?? strategies.find((entry) => entry.name === 'roa') ?? strategies[0];
  const fields = useMemo(() => optionFields(strategy?.options_schema), [strategy]);
  const values = strategy ? initialValues(fields, choice.options[strategy.name]) : {};
  const choose = (next: StrategyChoice) => {
    setChoice(next);
    saveStrategyChoice(next);
  };

  // A reopened chat goes on with the strategy (and options) of its last run, not whatever was picked last elsewhere.
  const { lastRun } = props;
  // biome-ignore lint/correctness/useExhaustiveDependencies: it runs when another chat opens (its id), not whenever the last run's object is new
  useEffect(() => {
    if (!lastRun) return;
    setChoice((current) => {
      const next: StrategyChoice = {
        strategy: lastRun.strategy,
        options: lastRun.options ? { ...current.options, [lastRun.strategy]: formValues(lastRun.options) } : current.options,
      };
      saveStrategyChoice(next);
      return next;
    });
  }, [lastRun?.sessionId]);

  // A new question takes the focus, so that typing answers it.
  useEffect(() => {
    if (question !== undefined) textarea.current?.focus();
  }, [question]);

  // Until the user picks, the run gets every built-in tool; defaults follow the server's limits.
  useEffect(() => setMaxSteps(String(defaultSteps)), [defaultSteps]);
  const enabledTools = enabled ?? new Set(tools.filter((tool) => tool.source === 'builtin').map((tool) => tool.name));

  const correct = () => {
    const corrected = correctMaxSteps(maxSteps, defaultSteps, limit);
    setMaxSteps(String(corrected));
    return corrected;
  };

  /** Sends the message: a new one, or while busy with `delivery` (Steer by default; a plain answer's is queued). */
  const submit = (event?: FormEvent, delivery?: Delivery) => {
    event?.preventDefault();
    if (question !== undefined) {
      const text = answer.trim();
      if (text && onAnswer(text)) setAnswer('');
      return;
    }
    const text = content.trim();
    if (!text) return;
    if (busy && !onSteer) return;
    const options: SendOptions = { agentMode, maxSteps: correct(), tools: tools.map((tool) => tool.name).filter((name) => enabledTools.has(name)) };
    if (attached.length) options.attachments = attached;
    if (offered && strategy) {
      const strategyOptions = optionsToSend(fields, values);
      options.strategy = strategy.name;
      if (Object.keys(strategyOptions).length > 0) options.strategyOptions = strategyOptions;
    }
    const sent = busy ? onSteer!(text, delivery ?? (runActive ? 'steer' : 'queue'), options) : onSend(text, options);
    if (sent) setContent('');
  };

  const toggleTool = (name: string) => {
    const next = new Set(enabledTools);
    if (next.has(name)) next.delete(name);
    else next.add(name);
    setEnabled(next);
  };

  const enabledCount = tools.filter((tool) => enabledTools.has(tool.name)).length;
  const strategyPart = offered && strategy ? ` · ${strategy.label}` : '';
  const optionsSummary = agentMode ? `Agent${strategyPart} · up to ${maxSteps} steps · ${enabledCount} tool${enabledCount === 1 ? '' : 's'}` : 'Plain chat';
  // Short, so that the box stays one line on a phone; Enter sends, Shift+Enter breaks the line.
  const placeholder =
    question !== undefined
      ? 'Your answer…'
      : parked
        ? 'The run waits for you…'
        : busy
          ? runActive
            ? 'Steer the agent…'
            : 'Queue a message…'
          : agentMode
            ? 'Ask the agent…'
            : 'Message…';
  const steering = busy && !parked && question === undefined && onSteer !== undefined;

  return (
    <form className={`composer${question !== undefined ? ' composer-answering' : ''}${started ? ' composer-started' : ''}`} onSubmit={submit}>
      <button
        type="button"
        className="ghost options-toggle"
        aria-expanded={optionsOpen}
        aria-controls={optionsId}
        onClick={() => setOptionsOpen((open) => !open)}
      >
        <SlidersIcon />
        <span>{optionsSummary}</span>
        <span aria-hidden="true" className="options-caret">
          {optionsOpen ? '▴' : '▾'}
        </span>
      </button>
      <div className={`agent-controls${optionsOpen ? ' agent-controls-open' : ''}`} id={optionsId}>
        <label className="switch">
          <input type="checkbox" role="switch" checked={agentMode} onChange={(event) => setAgentMode(event.target.checked)} aria-label="Agent mode" />
          <span className="switch-track" aria-hidden="true" />
          <span>Agent mode</span>
        </label>
        <label className="max-steps">
          <span>Max iterations</span>
          <input
            type="number"
            inputMode="numeric"
            min={1}
            max={limit}
            step={1}
            value={maxSteps}
            disabled={!agentMode}
            aria-label="Max iterations"
            onChange={(event) => setMaxSteps(event.target.value)}
            onBlur={correct}
          />
        </label>
        {agentMode && offered && strategy && (
          <StrategyPicker
            strategies={strategies}
            selected={strategy}
            fields={fields}
            values={values}
            onSelect={(name) => choose({ ...choice, strategy: name })}
            onChange={(name, value) => choose({ ...choice, options: { ...choice.options, [strategy.name]: { ...values, [name]: value } } })}
          />
        )}
        {agentMode && (tools.length > 0 || mcpServers.length > 0) && (
          <ToolPicker tools={tools} mcpServers={mcpServers} enabled={enabledTools} onToggle={toggleTool} />
        )}
      </div>
      {attached.length > 0 && question === undefined && <AttachedFiles names={attached} onDetach={onDetach} />}
      <div className="composer-row">
        <input
          ref={fileInput}
          type="file"
          multiple
          hidden
          aria-label="Attach files"
          onChange={(event) => {
            const files = [...(event.target.files ?? [])];
            event.target.value = '';
            if (files.length) onAttach(files);
          }}
        />
        <button type="button" className="attach" onClick={() => fileInput.current?.click()} disabled={!connected} title="Attach files (or drop them anywhere)">
          <PaperclipIcon />
          <span className="visually-hidden">Attach</span>
        </button>
        <textarea
          ref={textarea}
          aria-label={question !== undefined ? 'Your answer' : 'Message'}
          placeholder={placeholder}
          value={question !== undefined ? answer : content}
          rows={2}
          title="Enter sends, Shift+Enter breaks the line"
          onChange={(event) => (question !== undefined ? setAnswer : setContent)(event.target.value)}
          onPaste={(event) => {
            // A pasted picture (a screenshot) is attached like a picked file; pasted text stays text.
            const files = [...event.clipboardData.files];
            if (files.length === 0 || question !== undefined) return;
            event.preventDefault();
            onAttach(files.map((file, index) => (file.name && file.name !== 'image.png' ? file : renamePasted(file, index))));
          }}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
              event.preventDefault();
              submit();
            }
          }}
        />
        {question !== undefined && (
          <button type="submit" className="primary" disabled={!connected || !answer.trim()}>
            Answer
          </button>
        )}
        {steering && (
          <div className="steer-buttons">
            <button
              type="submit"
              className="primary"
              disabled={!connected || !content.trim()}
              title={runActive ? 'Reaches the run at its next step, before its next model call' : 'Sent when this answer is complete'}
            >
              {runActive ? 'Steer' : 'Queue'}
            </button>
            {runActive && <SendMenu disabled={!connected || !content.trim()} onPick={(delivery) => submit(undefined, delivery)} />}
          </div>
        )}
        {busy ? (
          <button type="button" className="danger" onClick={onStop} disabled={stopping} aria-label="Stop">
            {stopping ? 'Stopping…' : 'Stop'}
          </button>
        ) : (
          <button type="submit" className="primary" disabled={!connected || !content.trim()}>
            Send
          </button>
        )}
      </div>
    </form>
  );
}

/** Options as a run had them, as the form holds them (text for numbers). */
function formValues(options: Record<string, unknown>): OptionValues {
  const values: OptionValues = {};
  for (const [name, value] of Object.entries(options)) {
    if (typeof value === 'boolean') values[name] = value;
    else if (typeof value === 'string' || typeof value === 'number') values[name] = String(value);
  }
  return values;
}

/** A pasted picture gets a name of its own (browsers call every one "image.png", and a second would replace the first). */
function renamePasted(file: File, index: number): File {
  const extension = /^image\/(png|jpeg|webp|gif)$/.exec(file.type)?.[1]?.replace('jpeg', 'jpg') ?? 'bin';
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return new File([file], `pasted-${stamp}${index ? `-${index + 1}` : ''}.${extension}`, { type: file.type });
}
