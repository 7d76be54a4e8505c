// Herald Web Push service worker (example).
//
// Receives the JSON payload Herald's `webpush` channel sends (see docs/channels/webpush.md):
//   { id, type, title, body, tag, url, data, actions: [{action, title, url?, destructive?}],
//     badge, icon, image, severity, deviceId, ... }
// and reports lifecycle events to the hub, which records them with `router.recordEvent`.

// Where the hub accepts lifecycle reports. Herald itself has no HTTP server: the hub provides
// this endpoint and turns each report into a ChannelEvent (see docs/channels/webpush.md).
const EVENTS_URL = new URL('herald/events', self.registration.scope).href;

function report(payload, kind, actionId) {
  if (!payload || !payload.id) return Promise.resolve();
  const event = { notificationId: payload.id, kind, deviceId: payload.deviceId || null };
  if (actionId) event.actionId = actionId;
  return fetch(EVENTS_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(event),
    credentials: 'include',
    keepalive: true,
  }).catch(() => {}); // reporting is best effort
}

self.addEventListener('push', (event) => {
  let payload = {};
  try {
    payload = event.data ? event.data.json() : {};
  } catch (e) {
    payload = { title: 'Notification', body: event.data ? event.data.text() : '' };
  }
  const options = {
    body: payload.body || '',
    tag: payload.tag,
    renotify: Boolean(payload.tag && payload.renotify),
    icon: payload.icon,
    image: payload.image,
    requireInteraction: Boolean(payload.requireInteraction),
    silent: Boolean(payload.silent),
    lang: payload.lang,
    dir: payload.dir,
    data: payload,
    actions: (payload.actions || []).map((a) => ({ action: a.action, title: a.title })),
  };
  const work = [self.registration.showNotification(payload.title || 'Notification', options), report(payload, 'received')];
  if (typeof payload.badge === 'number' && 'setAppBadge' in navigator) {
    work.push(payload.badge > 0 ? navigator.setAppBadge(payload.badge) : navigator.clearAppBadge());
  }
  event.waitUntil(Promise.all(work));
});

async function openUrl(url) {
  if (!url) return;
  const target = new URL(url, self.registration.scope).href;
  const windows = await clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const w of windows) {
    if (w.url === target && 'focus' in w) return w.focus();
  }
  return clients.openWindow(target);
}

self.addEventListener('notificationclick', (event) => {
  const payload = event.notification.data || {};
  event.notification.close();
  if (event.action) {
    const action = (payload.actions || []).find((a) => a.action === event.action) || {};
    // An action with a url navigates; otherwise it is reported as an `action` event.
    event.waitUntil(Promise.all([report(payload, 'action', event.action), action.url ? openUrl(action.url) : null]));
    return;
  }
  event.waitUntil(Promise.all([report(payload, 'tapped'), openUrl(payload.url)]));
});

self.addEventListener('notificationclose', (event) => {
  event.waitUntil(report(event.notification.data || {}, 'dismissed'));
});
