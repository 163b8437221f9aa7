import type { HistoryMessage, LoggedEvent, SessionSummary } from '@stepwise/shared-types';

/** What a chat's Markdown is made of: its summary, the messages people wrote, and its event log. */
export interface ChatTranscript {
  session: SessionSummary;
  messages: HistoryMessage[];
  events: LoggedEvent[];
  exportedAt: string;
}

/**
 * A chat as Markdown, in the order it happened: each question, each run with every step (reason,
 * tool calls with their arguments and results, observe), questions the agent asked, how the run
 * ended, and each answer. The user's messages are placed by the log position they were accepted at.
 */
export function chatMarkdown({ session, messages, events, exportedAt }: ChatTranscript): string {
  const out: string[] = [
    `# ${oneLine(session.title ?? 'Untitled chat')}`,
    '',
    `_Exported from Stepwise on ${exportedAt}. Chat ${session.id}, started ${session.created_at}._`,
  ];
  const questions = messages.filter((message) => message.role === 'user');
  let next = 0;
  const questionsBefore = (seq: number) => {
    while (next < questions.length && questions[next]!.after_seq < seq) {
      out.push('', '## You', '', questions[next]!.content);
      next++;
    }
  };
  let run = 0;
  for (const event of events) {
    questionsBefore(event.seq);
    out.push(...eventMarkdown(event, () => ++run));
  }
  questionsBefore(Number.POSITIVE_INFINITY);
  return `${out.join('\n').replace(/\n{3,}/g, '\n\n')}\n`;
}

/** One event's lines (none for the events a reader need not see). */
function eventMarkdown(event: LoggedEvent, nextRun: () => number): string[] {
  const where = 'node_id' in event && event.node_id ? ` (${event.node_id})` : '';
  switch (event.type) {
    case 'agent_update':
      return agentUpdateMarkdown(event as AgentUpdateEvent, where, nextRun);
    case 'tool_start':
      return [
        '',
        `#### Tool call \`${event.tool_name}\`${where}`,
        '',
        `Step ${event.step}, call ${event.tool_call_id}. Arguments:`,
        '',
        fenced(json(event.arguments), 'json'),
      ];
    case 'tool_complete':
      return [
        '',
        `Result of \`${event.tool_name}\`:`,
        '',
        fenced(typeof event.result === 'string' ? event.result : json(event.result), typeof event.result === 'string' ? '' : 'json'),
      ];
    case 'tool_error':
      return ['', `\`${event.tool_name}\` failed: ${oneLine(event.error)}`];
    case 'assistant_message':
      return ['', '## Answer', '', event.content];
    case 'error':
      return ['', `> **Error** (${event.code}): ${oneLine(event.message)}`];
    case 'file_saved':
      return ['', `_File saved: ${event.file.name}_`];
    case 'file_deleted':
      return ['', `_File deleted: ${event.name}_`];
    case 'snapshot_saved':
      return ['', `_Snapshot saved: ${oneLine(event.label)}_`];
    case 'session_rolled_back':
      return ['', `_Rolled back to the state at event ${event.to_seq}_`];
    case 'response_complete':
      return [];
    default: {
      const never: never = event;
      return never;
    }
  }
}

type AgentUpdateEvent = Extract<LoggedEvent, { type: 'agent_update' }> & Record<string, unknown>;

function agentUpdateMarkdown(event: AgentUpdateEvent, where: string, nextRun: () => number): string[] {
  const text = (key: string) => (typeof event[key] === 'string' ? (event[key] as string) : '');
  switch (event.update_type) {
    case 'agent_start':
      return [
        '',
        `## Run ${nextRun()}${event.strategy ? ` · ${String(event.strategy)}` : ''}`,
        '',
        `Up to ${String(event.max_steps)} steps${Array.isArray(event.tools) && event.tools.length ? `; tools: ${event.tools.join(', ')}` : ''}.`,
      ];
    case 'agent_turn_start':
      return ['', `### Step ${String(event.step)}${where}`];
    case 'agent_reason':
      return ['', `**Reason.** ${text('content')}`];
    case 'agent_observe':
      return ['', `**Observe.** ${text('content')}`];
    case 'agent_request_input':
      return ['', `**The agent asked${where}:** ${oneLine(text('question'))}`];
    case 'agent_request_input_timeout':
      return ['', '_Nobody answered in time._'];
    case 'agent_parked':
      return ['', '_Nobody answered in time: the run waits for an answer._'];
    case 'agent_stopped':
      return ['', `_The run was stopped${event.reason ? ` (${String(event.reason)})` : ''}._`];
    case 'agent_error':
      return ['', `_The run failed: ${oneLine(text('message'))}_`];
    case 'agent_completion':
      return ['', `_The run ended after ${String(event.steps)} steps${event.reason ? ` (${String(event.reason)})` : ''}._`];
    default: {
      // A strategy's own update (a plan, a task): named, with its text when it has one.
      const content = text('content') || text('message') || text('title');
      return content ? ['', `**${event.update_type}${where}.** ${content}`] : [];
    }
  }
}

const json = (value: unknown) => JSON.stringify(value, null, 2) ?? 'null';

/** A fenced block that no run of backticks inside it can close. */
function fenced(text: string, language: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((match) => match[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${language}\n${text}\n${fence}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
