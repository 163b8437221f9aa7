import { pushApi } from './api.ts';

function fromBase64Url(value: string): Uint8Array<ArrayBuffer> {
  const binary = atob(value.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index);
  return bytes;
}

/**
 * Once notifications are allowed: registers the service worker and subscribes this browser to the
 * server's push messages, so the agent reaches the person with the app closed. Where the browser
 * has no push (or the page is not a secure context), the tab's own notifications remain.
 */
export async function subscribeToPush(): Promise<void> {
  if (!('serviceWorker' in navigator) || typeof PushManager === 'undefined' || Notification.permission !== 'granted') return;
  const registration = await navigator.serviceWorker.register('/sw.js');
  const key = await pushApi.key();
  const subscription =
    (await registration.pushManager.getSubscription()) ??
    (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: fromBase64Url(key) }));
  await pushApi.subscribe(subscription.toJSON());
}
