/** The states a stop ends a run or a task in. */
export type StopState = "timeout" | "cancelled" | "failed" | "interrupted";

/**
 * Why a run or a task was stopped before it ended on its own: its timeout, a cancel, or a rule
 * it broke (a script that kept calling `agent()` after being refused). The reason of its abort
 * signal; the state it ends in and its error's code come from here.
 */
export class StopReason extends Error {
  readonly state: StopState;
  /** The error's code: the state, unless a rule names its own. */
  readonly code: string;
  constructor(state: StopState, message: string, code: string = state) {
    super(message);
    this.name = "StopReason";
    this.state = state;
    this.code = code;
  }
}
