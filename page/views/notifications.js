/**
 * Notifications: the caller's runs and tasks that ended badly or hit a limit, and calls waiting
 * for a person; read and unread, marked read one by one or all at once. The header's badge
 * counts the unread ones live, and, only once the person has allowed it with the button here,
 * shows the browser's own notification for each new one.
 */
import { html, useEffect, useRef, useState } from "../lib/html.js";
import { useAction } from "../lib/action.js";
import { useResource } from "../lib/live.js";
import { age, seg } from "../lib/format.js";
import { Empty, ErrorBox, Section } from "../lib/ui.js";

/** The general events that can make a notification: state changes and approval waits. */
const KINDS = ["run", "task", "approval"];
/** What this page says when it marked some read: the badge reads its count again. */
const MARKED = "svc:notifications-read";

function marked() {
  dispatchEvent(new Event(MARKED));
}

function link(item) {
  if (item.kind === "approval") return "#/approvals";
  return item.run_id ? `#/runs/${seg(item.run_id)}` : `#/tasks/${seg(item.task_id)}`;
}

function browserSupport() {
  return typeof Notification === "function";
}

/** The button that asks the browser for permission; the page never asks on its own. */
function BrowserPermission() {
  const [permission, setPermission] = useState(
    browserSupport() ? Notification.permission : "unsupported",
  );
  if (permission === "unsupported") return null;
  if (permission === "granted") {
    return html`<span class="muted" data-browser="granted">Browser notifications on</span>`;
  }
  if (permission === "denied") {
    return html`<span class="muted" data-browser="denied">Browser notifications blocked</span>`;
  }
  const ask = async () => setPermission(await Notification.requestPermission());
  return html`<button onClick=${ask}>Show browser notifications</button>`;
}

function Item({ api, item, onChanged }) {
  const { busy, error, run } = useAction();
  const mark = () =>
    run(async () => {
      await api.json("/api/notifications/read", { body: { ids: [item.id] } });
      marked();
      onChanged();
    });
  return html`
    <li class=${`panel notification ${item.read ? "read" : "unread"}`} data-id=${item.id}>
      <span class=${`badge kind-${item.kind}`}>${item.kind}</span>
      <a href=${link(item)}>${item.title}</a>
      <span class="muted">${age(item.at)} ago</span>
      ${item.read
        ? null
        : html`<button class="link" disabled=${busy} onClick=${mark}>Mark read</button>`}
      <${ErrorBox} error=${error} title="Cannot mark it read" />
    </li>
  `;
}

/** `#/notifications`. */
export function NotificationsView({ api }) {
  const [unreadOnly, setUnreadOnly] = useState(false);
  const [pages, setPages] = useState([]);
  const first = useResource(
    (signal) =>
      api.json(`/api/notifications?limit=50${unreadOnly ? "&unread=true" : ""}`, { signal }),
    [unreadOnly],
    { kinds: KINDS, debounceMs: 300 },
  );
  useEffect(() => setPages([]), [unreadOnly, first.data]);
  const all = useAction();
  const list = [first.data, ...pages].flatMap((page) => page?.notifications ?? []);
  const next = (pages.at(-1) ?? first.data)?.next_cursor;
  const more = () =>
    all.run(async () => {
      const page = await api.json(
        `/api/notifications?limit=50&cursor=${seg(next)}${unreadOnly ? "&unread=true" : ""}`,
      );
      setPages((p) => [...p, page]);
    });
  const markAll = () =>
    all.run(async () => {
      await api.json("/api/notifications/read", { body: { all: true } });
      marked();
      first.reload();
    });
  const actions = html`
    <label class="inline"><input type="checkbox" checked=${unreadOnly}
      onChange=${(e) => setUnreadOnly(e.currentTarget.checked)} /> Unread only</label>
    <button onClick=${markAll} disabled=${all.busy ||
      (first.data?.unread ?? 0) === 0}>Mark all read</button>
    <${BrowserPermission} />
  `;
  return html`<${Section} title="Notifications" actions=${actions}>
    <${ErrorBox} error=${first.error ?? all.error} title="Cannot list the notifications" />
    ${
    list.length === 0 && !first.loading
      ? html`<${Empty}>No notifications: nothing failed, hit a limit or waits for you.<//>`
      : html`<ul class="notifications">${
        list.map((item) =>
          html`<${Item} key=${item.id} api=${api} item=${item} onChanged=${first.reload} />`
        )
      }</ul>`
  }
    ${next ? html`<button onClick=${more} disabled=${all.busy}>Older</button>` : null}
  <//>`;
}

/**
 * The header's link to the notifications with the unread count, live. New unread ones also
 * show as the browser's notifications when the person has allowed them.
 */
export function NotificationBadge({ api, current }) {
  const latest = useResource(
    (signal) => api.json("/api/notifications?limit=5&unread=true", { signal }),
    [],
    { kinds: KINDS, debounceMs: 300 },
  );
  const seen = useRef(undefined);
  const reload = useRef(latest.reload);
  reload.current = latest.reload;
  useEffect(() => {
    const again = () => reload.current();
    addEventListener(MARKED, again);
    return () => removeEventListener(MARKED, again);
  }, []);
  useEffect(() => {
    const items = latest.data?.notifications;
    if (!items) return;
    const known = seen.current;
    seen.current = new Set(items.map((n) => n.id));
    // The first read only learns what is there: only later ones are news.
    if (known === undefined || !browserSupport() || Notification.permission !== "granted") return;
    for (const item of items) {
      if (!known.has(item.id)) new Notification("svc", { body: item.title, tag: item.id });
    }
  }, [latest.data]);
  const unread = latest.data?.unread ?? 0;
  return html`
    <a href="#/notifications" class="notify-link" aria-current=${current ? "page" : undefined}
      aria-label=${`Notifications, ${unread} unread`}>Notifications${unread > 0
        ? html`
          <span class="count" data-unread=${unread}>${unread}</span>
        `
        : null}</a>
  `;
}
