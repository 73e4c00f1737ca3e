/**
 * Why a run was stopped before its script ended: its timeout, a cancel, or a rule the script
 * broke (it kept calling `agent()` after being refused). The reason of the run's abort signal.
 */
export class RunStop extends Error {
  readonly state: "timeout" | "cancelled" | "failed";
  /** The run error's code: the state, unless a rule names its own. */
  readonly code: string;
  constructor(state: "timeout" | "cancelled" | "failed", message: string, code: string = state) {
    super(message);
    this.name = "RunStop";
    this.state = state;
    this.code = code;
  }
}
