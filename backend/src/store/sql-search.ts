import { type Kysely, sql } from 'kysely';
import { SEARCH_EXPRESSIONS, type SqlDialectName } from './migrations.ts';
import { iso, type SearchRow, type Tables } from './sql-tables.ts';
import { HIGHLIGHT_END, HIGHLIGHT_START, type SearchHit, type SearchQuery } from './store.ts';

/** Search over the chats' titles and messages, each database with its own index (see migrations). */
export async function searchSessions(db: Kysely<Tables>, dialect: SqlDialectName, query: SearchQuery): Promise<SearchHit[]> {
  if (query.terms.length === 0) return [];
  const rows = dialect === 'sqlite' ? await searchSqlite(db, query) : await searchPostgres(db, query);
  return rows.map((row) => ({
    sessionId: row.session_id,
    title: row.title,
    updatedAt: iso(row.updated_at),
    owner: row.owner,
    ownerName: row.owner_name,
    message:
      row.position === null || Number(row.position) < 0
        ? undefined
        : { position: Number(row.position), role: row.role === 'user' ? 'user' : 'assistant', afterSeq: Number(row.after_seq ?? 0) },
    snippet: row.snippet,
  }));
}

/** FTS5 over search_docs (kept by triggers): every term as a prefix of a word, best match (bm25) first. */
async function searchSqlite(db: Kysely<Tables>, { terms, owner, limit }: SearchQuery): Promise<SearchRow[]> {
  const match = terms.map((term) => `"${term.replaceAll('"', '""')}"*`).join(' ');
  const { rows } = await sql<SearchRow>`
    select d.session_id, s.title, s.updated_at, s.owner, s.owner_name, d.position,
      json_extract(m.message, '$.role') as role, m.after_seq,
      snippet(search_fts, 0, ${HIGHLIGHT_START}, ${HIGHLIGHT_END}, '…', 24) as snippet
    from search_fts
    join search_docs d on d.id = search_fts.rowid
    join sessions s on s.id = d.session_id
    left join messages m on m.session_id = d.session_id and m.position = d.position
    where search_fts match ${match} ${owner === undefined ? sql`` : sql`and s.owner = ${owner}`}
    order by bm25(search_fts), s.updated_at desc, d.position
    limit ${limit}`.execute(db);
  return rows;
}

/** The expression indexes of titles and messages: every term as a prefix of a word, best match (ts_rank) first. */
async function searchPostgres(db: Kysely<Tables>, { terms, owner, limit }: SearchQuery): Promise<SearchRow[]> {
  const tsquery = terms.map((term) => `${term}:*`).join(' & ');
  const mine = owner === undefined ? sql`` : sql`and s.owner = ${owner}`;
  const title = sql.raw(SEARCH_EXPRESSIONS.postgresTitle);
  const message = sql.raw(SEARCH_EXPRESSIONS.postgresMessage);
  // A short text is shown whole (as SQLite's snippet does), a long one as the fragment around the match.
  const marks = `StartSel=${HIGHLIGHT_START}, StopSel=${HIGHLIGHT_END}`;
  // (HighlightAll holds only without fragments.)
  const [whole, fragment] = [`${marks}, HighlightAll=true`, `${marks}, MinWords=12, MaxWords=30, MaxFragments=1, FragmentDelimiter=" … "`];
  const { rows } = await sql<SearchRow>`
    with q as (select to_tsquery('english', ${tsquery}) as query)
    select hits.session_id, hits.title, hits.updated_at, hits.owner, hits.owner_name, hits.position, hits.role, hits.after_seq,
      ts_headline('english', hits.body, q.query, case when length(hits.body) <= 240 then ${whole} else ${fragment} end) as snippet
    from (
      select s.id::text as session_id, s.title, s.updated_at, s.owner, s.owner_name, -1 as position, null as role, null::integer as after_seq,
        s.title as body, ts_rank(${title}, q.query) as rank
      from sessions s, q where ${title} @@ q.query ${mine}
      union all
      select s.id::text, s.title, s.updated_at, s.owner, s.owner_name, m.position, m.message->>'role', m.after_seq,
        m.message->>'content', ts_rank(${message}, q.query)
      from messages m join sessions s on s.id = m.session_id, q where ${message} @@ q.query ${mine}
      order by rank desc, updated_at desc, position
      limit ${limit}
    ) hits, q
    order by hits.rank desc, hits.updated_at desc, hits.position`.execute(db);
  return rows;
}
