import type { ChatExport, HistoryMessage } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import type { User } from '../auth/user.ts';
import type { SessionRecord, Store } from '../store/store.ts';
import { TOKENS } from '../tokens.ts';
import { chatMarkdown } from './chat-markdown.ts';
import { HistoryService, toRunSummary, toSummary } from './history-service.ts';

/** How many events one read of the log takes while a chat is exported. */
const EVENTS_PER_READ = 1000;

/** A chat taken away whole: as JSON (its events, as the history API gives them) or as Markdown. */
@injectable()
export class ChatExporter {
  constructor(
    @inject(TOKENS.Store) private readonly store: Store,
    @inject(HistoryService) private readonly history: HistoryService,
  ) {}

  /** The chat as the viewer may read it (the history API's rules), up to its last event now. */
  async export(id: string, viewer: User): Promise<ChatExport> {
    const detail = await this.history.get(id, viewer);
    const events = await this.eventsUpTo(id, detail.last_seq);
    return {
      format: 'stepwise.chat',
      version: 1,
      exported_at: new Date().toISOString(),
      session: detail.session,
      messages: detail.messages,
      runs: detail.runs,
      events,
    };
  }

  /**
   * A chat as it stood when its log ended at `atSeq` (a shared link's view): the messages accepted
   * by then, the runs begun by then, the events up to it. No access check: the caller has made it.
   */
  async asOf(session: SessionRecord, atSeq: number): Promise<ChatExport> {
    const [messages, runs, events] = await Promise.all([
      this.store.listMessages(session.id),
      this.store.listRuns(session.id),
      this.eventsUpTo(session.id, atSeq),
    ]);
    const readable = messages.flatMap(({ message, afterSeq }): HistoryMessage[] =>
      (message.role === 'user' || message.role === 'assistant') && typeof message.content === 'string' && message.content && afterSeq < atSeq
        ? [{ role: message.role, content: message.content, after_seq: afterSeq }]
        : [],
    );
    return {
      format: 'stepwise.chat',
      version: 1,
      exported_at: new Date().toISOString(),
      session: toSummary(session),
      messages: readable,
      runs: runs.filter((run) => run.afterSeq === undefined || run.afterSeq < atSeq).map(toRunSummary),
      events,
    };
  }

  /** The chat as Markdown: every question, step, tool call and answer (see chatMarkdown). */
  markdown(chat: ChatExport): string {
    return chatMarkdown({ session: chat.session, messages: chat.messages, events: chat.events, exportedAt: chat.exported_at });
  }

  private async eventsUpTo(id: string, lastSeq: number): Promise<ChatExport['events']> {
    const events: ChatExport['events'] = [];
    let after = 0;
    while (after < lastSeq) {
      const page = await this.store.listEvents(id, after, EVENTS_PER_READ);
      for (const event of page) if (event.seq <= lastSeq) events.push(event);
      if (page.length < EVENTS_PER_READ) break;
      after = page.at(-1)!.seq;
    }
    return events;
  }
}
