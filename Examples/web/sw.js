// Herald Web Push service worker (example).
//
// Receives the JSON payload Herald's `webpush` channel sends (see docs/channels/webpush.md):
//   { id, type, title, body, tag, url, data, actions: [{action, title, url?, destructive?}],
//     badge, icon, image, severity, deviceId, ... }
// and reports lifecycle events through Herald's HTTP API (`herald serve`):
//   POST /v1/notifications/{id}/events  {"kind": "received|tapped|dismissed|action", "action"?, "deviceId"?}
// (docs/http-api.md, "Lifecycle events"). The worker calls that path on its own origin, where the
// site's backend (here Examples/web/hub.py) adds its Herald token, so no token reaches the browser.

// `v1/notifications/{id}/events`, relative to the worker's scope (the page's folder).
function eventsURL(id) {
  return new URL('v1/notifications/' + encodeURIComponent(id) + '/events', self.registration.scope).href;
}

function report(payload, kind, action) {
  if (!payload || !payload.id) return Promise.resolve();
  // The shape the events route accepts: kind, action (only with kind action), deviceId, data.
  const event = { kind };
  if (action) event.action = action;
  if (payload.deviceId) event.deviceId = payload.deviceId;
  return fetch(eventsURL(payload.id), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(event),
    credentials: 'same-origin',
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
