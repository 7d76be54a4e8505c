#!/usr/bin/env node
// Runs Examples/web/sw.js in a Node vm with fakes of the service-worker globals (registration,
// clients, navigator, fetch) and replays the life of one push:
//   push (with the decrypted payload) -> notificationclick on an action -> notificationclick on the
//   body -> notificationclose.
// stdin:  {"payload": "<decrypted JSON text>", "action": "<action id>", "scope": "https://hub/app/"}
// stdout: the list of calls the worker made, in order, or {"error": "..."}.
'use strict';
const fs = require('fs');
const vm = require('vm');

async function main() {
  const swPath = process.argv[2];
  const input = JSON.parse(fs.readFileSync(0, 'utf8'));
  const calls = [];
  const listeners = {};
  const registration = {
    scope: input.scope,
    showNotification: async (title, options) => {
      calls.push({ call: 'showNotification', title, options });
    },
  };
  const context = vm.createContext({
    self: { registration, addEventListener: (type, fn) => { listeners[type] = fn; } },
    clients: {
      matchAll: async () => [],
      openWindow: async (url) => { calls.push({ call: 'openWindow', url }); },
    },
    navigator: {
      setAppBadge: async (n) => { calls.push({ call: 'setAppBadge', n }); },
      clearAppBadge: async () => { calls.push({ call: 'clearAppBadge' }); },
    },
    fetch: async (url, init) => {
      calls.push({ call: 'fetch', url, method: init.method, body: JSON.parse(init.body) });
      return { ok: true };
    },
    URL,
    console,
  });
  vm.runInContext(fs.readFileSync(swPath, 'utf8'), context, { filename: swPath });

  async function dispatch(type, event) {
    if (!listeners[type]) throw new Error(`sw.js registers no ${type} listener`);
    const waits = [];
    event.waitUntil = (p) => waits.push(p);
    listeners[type](event);
    await Promise.all(waits);
  }

  const text = input.payload;
  await dispatch('push', { data: { json: () => JSON.parse(text), text: () => text } });
  const shown = calls.find((c) => c.call === 'showNotification');
  if (!shown) throw new Error('push did not show a notification');
  const notification = { data: shown.options.data, close: () => calls.push({ call: 'close' }) };
  await dispatch('notificationclick', { notification, action: input.action });
  await dispatch('notificationclick', { notification, action: '' });
  await dispatch('notificationclose', { notification });
  // The options carry the payload back as `data`; it is checked on the Swift side.
  process.stdout.write(JSON.stringify(calls));
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ error: String((e && e.stack) || e) }));
});
