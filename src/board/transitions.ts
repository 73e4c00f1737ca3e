import { SvcError } from "../errors/mod.ts";
import type { BoardAction, CardState } from "../schemas/mod.ts";

/**
 * The transition table: for each action on an existing card, the states it may start from and
 * the state it leaves. A state missing from an action's row refuses it (`conflict`). `log`
 * keeps the state. A cancelled card is frozen: nothing applies to it. (docs/BOARD.md.)
 */
export const TRANSITIONS: Readonly<
  Record<Exclude<BoardAction, "new">, Readonly<Partial<Record<CardState, CardState>>>>
> = {
  take: { new: "taken", taken: "taken", dropped: "taken" },
  log: { new: "new", taken: "taken", done: "done", dropped: "dropped" },
  done: { new: "done", taken: "done" },
  drop: { new: "dropped", taken: "dropped" },
  cancel: { new: "cancelled", taken: "cancelled", dropped: "cancelled" },
};

const VERBS: Record<Exclude<BoardAction, "new">, string> = {
  take: "take",
  log: "log on",
  done: "finish",
  drop: "drop",
  cancel: "cancel",
};

/** The actions a card in `state` accepts. */
export function actionsFrom(state: CardState): BoardAction[] {
  return (Object.keys(TRANSITIONS) as Array<Exclude<BoardAction, "new">>)
    .filter((action) => TRANSITIONS[action][state] !== undefined);
}

/** The state `action` moves card `issueId` to from `state`; `conflict` when it makes no sense. */
export function transition(
  action: Exclude<BoardAction, "new">,
  state: CardState,
  issueId: string,
): CardState {
  const next = TRANSITIONS[action][state];
  if (next !== undefined) return next;
  const allowed = actionsFrom(state);
  throw new SvcError(
    "conflict",
    `Cannot ${VERBS[action]} card ${issueId}: it is ${state}` +
      (allowed.length > 0
        ? `; a ${state} card accepts ${allowed.join(", ")}`
        : `; a ${state} card accepts no action`),
  );
}
