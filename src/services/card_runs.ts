import type { BoardRunLink } from "../board/mod.ts";
import type { Caller, RunState } from "../ledger/mod.ts";
import { noSuch } from "./not_found.ts";
import type { Services } from "./open_services.ts";

/** A run of a card as the card shows it: the link, and the run's state and figures now. */
export interface CardRun extends BoardRunLink {
  /** The run's name (its script's `meta.name`), or its file name. */
  name: string;
  /** Where the run is in its life. */
  state: RunState;
  /** When it ended, once it did. */
  ended_at: string | null;
  /** Its `agent()` calls so far. */
  calls: number;
  /** What its journaled calls cost, in US dollars; null when unknown. */
  cost_usd: number | null;
}

/**
 * The runs that worked on card `issueId`, newest first, each with its state now. The card must
 * be one the caller may see (`not_found` otherwise, as for an unknown card); a linked run the
 * caller may not see (another owner's, on an administrator's card) is left out.
 */
export async function cardRuns(
  services: Pick<Services, "board" | "runs">,
  issueId: string,
  caller: Caller,
): Promise<CardRun[]> {
  const card = await services.board.get(issueId, caller);
  if (!card) throw noSuch("card", issueId);
  const links = [...(card.runs ?? [])].reverse();
  const runs = await Promise.all(links.map((link) => services.runs.get(link.run_id, caller)));
  const out: CardRun[] = [];
  for (const [i, run] of runs.entries()) {
    if (!run) continue;
    out.push({
      ...links[i]!,
      name: run.name ?? run.filename,
      state: run.state,
      ended_at: run.ended_at,
      calls: run.calls.total,
      cost_usd: run.journal.usage.cost_usd,
    });
  }
  return out;
}
