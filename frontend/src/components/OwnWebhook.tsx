import { type FormEvent, useEffect, useState } from 'react';
import { type OwnWebhook as Webhook, pushApi } from '../lib/api.ts';
import { CopyableSnippet } from './CopyableSnippet.tsx';

/**
 * The person's own webhook (Settings, Notifications): where their chats' notifications are posted
 * besides the server's webhook, signed (Standard Webhooks) with a secret of their own, shown here.
 */
export function OwnWebhook() {
  const [webhook, setWebhook] = useState<Webhook | undefined>();
  const [url, setUrl] = useState('');
  const [problem, setProblem] = useState('');
  useEffect(() => {
    pushApi.ownWebhook().then(
      (found) => {
        setWebhook(found);
        setUrl(found.url ?? '');
      },
      (error: unknown) => setProblem((error as Error).message),
    );
  }, []);
  const save = async (next: string | null) => {
    setProblem('');
    try {
      const saved = await pushApi.setOwnWebhook(next);
      setWebhook(saved);
      setUrl(saved.url ?? '');
    } catch (error) {
      setProblem((error as Error).message);
    }
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (url.trim()) void save(url.trim());
  };
  if (!webhook) return problem ? <p role="alert">{problem}</p> : null;
  return (
    <form className="own-webhook" onSubmit={submit} data-testid="own-webhook">
      <label>
        Your webhook (your chats’ questions, approvals and run endings are posted there)
        <input type="url" value={url} onChange={(event) => setUrl(event.target.value)} placeholder="https://example.com/hooks/stepwise" />
      </label>
      <div className="own-webhook-actions">
        <button type="submit" className="primary" disabled={!url.trim() || url.trim() === webhook.url}>
          Save
        </button>
        {webhook.url && (
          <button type="button" className="ghost" onClick={() => void save(null)}>
            Remove
          </button>
        )}
      </div>
      {webhook.secret && <CopyableSnippet label="Its signing secret (Standard Webhooks; verify each delivery with it)" text={webhook.secret} />}
      {problem && <p role="alert">{problem}</p>}
    </form>
  );
}
