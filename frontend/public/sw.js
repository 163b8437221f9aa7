// Stepwise's service worker: shows a notification a push message brings (the agent needs the
// person, or a run ended) with the app closed, and opens its page when it is clicked.
self.addEventListener('push', (event) => {
  let message = { title: 'Stepwise', body: '', url: '/', tag: 'stepwise' };
  try {
    message = { ...message, ...event.data.json() };
  } catch {
    // A message that is not JSON still tells the person something happened.
  }
  event.waitUntil(self.registration.showNotification(message.title, { body: message.body, tag: message.tag, data: { url: message.url } }));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = event.notification.data?.url ?? '/';
  event.waitUntil(
    (async () => {
      const open = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      const same = open.find((client) => client.url === url);
      return same ? same.focus() : self.clients.openWindow(url);
    })(),
  );
});
