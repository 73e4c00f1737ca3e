/** What every button that calls the API shares: a busy flag, and the error of its last try. */
import { useState } from "./html.js";

/**
 * `{busy, error, setError, run}`: `run(action)` clears the error, marks the view busy while
 * `action()` runs, keeps the error it throws for the view to show, and resolves to its value
 * (undefined when it threw).
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState();
  const run = async (action) => {
    setBusy(true);
    setError(undefined);
    try {
      return await action();
    } catch (e) {
      setError(e);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}
