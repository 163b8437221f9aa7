import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { ChatCopy, CreateShare, SharedChat, ShareInfo } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import { chatAccess, ownerOf, type User } from '../auth/user.ts';
import { SessionFiles } from '../files/session-files.ts';
import type { SessionRecord, ShareRecord, Store } from '../store/store.ts';
import { TOKENS } from '../tokens.ts';
import { UUID } from '../util/ids.ts';
import { ChatExporter } from './chat-export.ts';
import { HistoryError } from './history-service.ts';

/** The web app's page for a shared link. */
export const sharedPage = (token: string) => `/?shared=${encodeURIComponent(token)}`;

/** A token's SHA-256 (hex): what the store keeps and looks a link up by. */
const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

/** A link's token: 256 random bits, URL-safe. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** Why a link shows nothing: the same for a link that never was, was revoked, or has expired. */
const GONE = () => new HistoryError(404, 'not_found', 'This link does not exist, was revoked, or has expired');

/**
 * Read-only links to a chat as it stood: its owner makes them (a random token, an optional
 * expiry, files or not) and revokes them; anyone with one reads that chat and nothing else; a
 * signed-in person may copy it into a chat of their own to go on with. Every use of a link reads
 * the store, so a revoked link stops working at once on every instance.
 */
@injectable()
export class ChatShares {
  constructor(
    @inject(TOKENS.Store) private readonly store: Store,
    @inject(ChatExporter) private readonly exporter: ChatExporter,
    @inject(SessionFiles) private readonly files: SessionFiles,
  ) {}

  /** Makes a link to the owner's chat as it stands now; the token is in the answer, and nowhere else ever. */
  async create(sessionId: string, viewer: User, request: CreateShare): Promise<ShareInfo> {
    await this.ownChat(sessionId, viewer);
    const token = randomBytes(32).toString('base64url');
    const expiresAt = request.expires_in_hours === undefined ? undefined : new Date(Date.now() + request.expires_in_hours * 3_600_000).toISOString();
    const share = await this.store.createShare({
      id: randomUUID(),
      tokenHash: hashOf(token),
      sessionId,
      createdBy: viewer.id,
      atSeq: await this.store.lastSeq(sessionId),
      includeFiles: request.include_files,
      expiresAt,
    });
    return { ...toInfo(share), token, url: sharedPage(token) };
  }

  /** The owner's links to their chat, oldest first (without their tokens). */
  async list(sessionId: string, viewer: User): Promise<ShareInfo[]> {
    await this.ownChat(sessionId, viewer);
    return (await this.store.listShares(sessionId)).map(toInfo);
  }

  /** Revokes a link: from the next request on, on every instance, it shows nothing. */
  async revoke(sessionId: string, shareId: string, viewer: User): Promise<void> {
    await this.ownChat(sessionId, viewer);
    if (!(await this.store.deleteShare(sessionId, shareId))) throw new HistoryError(404, 'not_found', 'This chat has no such link');
  }

  /** The chat a link shows, as it stood when the link was made. */
  async open(token: string): Promise<SharedChat> {
    const { share, session } = await this.find(token);
    const chat = await this.exporter.asOf(session, share.atSeq);
    return {
      chat,
      shared_at: share.createdAt,
      expires_at: share.expiresAt ?? null,
      ...(share.includeFiles ? { files: await this.files.list(session.id) } : {}),
    };
  }

  /** Where a link's chat keeps its files, when the link shows them. */
  async filesOf(token: string): Promise<string> {
    const { share } = await this.find(token);
    if (!share.includeFiles) throw new HistoryError(404, 'not_found', 'This link does not show the chat’s files');
    return share.sessionId;
  }

  /** A new chat of the viewer's own holding the shared one as it stood (its history and log), to go on with. */
  async copy(token: string, viewer: User): Promise<ChatCopy> {
    const { share, session } = await this.find(token);
    const id = randomUUID();
    await this.store.createSession(id, ownerOf(viewer));
    const messages = (await this.store.listMessages(session.id)).filter((record) => record.afterSeq < share.atSeq);
    for (const record of messages) await this.store.appendMessages(id, [record.message], record.afterSeq);
    const chat = await this.exporter.asOf(session, share.atSeq);
    // In order, committed together (the store writes a burst of events as one group).
    await Promise.all(chat.events.map((event) => this.store.appendEvent(id, event)));
    if (session.title !== null) await this.store.renameSession(id, session.title);
    return { session_id: id };
  }

  private async find(token: string): Promise<{ share: ShareRecord; session: SessionRecord }> {
    if (!TOKEN_SHAPE.test(token)) throw GONE();
    const share = await this.store.findShare(hashOf(token));
    if (!share || (share.expiresAt !== undefined && Date.parse(share.expiresAt) <= Date.now())) throw GONE();
    const session = await this.store.getSession(share.sessionId);
    if (!session) throw GONE();
    return { share, session };
  }

  /** Only a chat's owner manages its links: another person's chat is not found (an admin's is read-only to them). */
  private async ownChat(sessionId: string, viewer: User): Promise<SessionRecord> {
    if (!UUID.test(sessionId)) throw new HistoryError(400, 'invalid_id', 'A session id is a UUID');
    const session = await this.store.getSession(sessionId);
    const access = session ? chatAccess(viewer, session.owner) : 'none';
    if (access === 'none') throw new HistoryError(404, 'not_found', 'No such session');
    if (access === 'watch') throw new HistoryError(403, 'read_only', 'Only the chat’s owner may share it');
    return session!;
  }
}

function toInfo(share: ShareRecord): ShareInfo {
  return { id: share.id, created_at: share.createdAt, expires_at: share.expiresAt ?? null, include_files: share.includeFiles, at_seq: share.atSeq };
}
