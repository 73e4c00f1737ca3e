/**
 * One repetition of the figures measured many times (start, microvm, cli, durable steps,
 * memory), each group's measurements in turn.
 * @module
 */
import { timeMicrovmStandInGuest } from "../bench_microvm.ts";
import { timeBareDeno, timeCli, timeCliLauncher } from "./cli.ts";
import {
  BWRAP_OK,
  type Group,
  PRESTARTED_GUEST_OPTIONS,
  type Repetition,
  withTempDir,
} from "./common.ts";
import { peakMemory, peakMemoryBare } from "./memory.ts";
import { timeBareGuest, timeFirstCallInProcess } from "./start.ts";
import {
  timeBareCommit,
  timeChainAndReplay,
  timeFanout,
  timeFanoutAndReplay,
  timeJournalWrite,
} from "./steps.ts";

/** One repetition of every figure of the groups in `only` (NaN where not measured). */
export async function repetition(
  root: string,
  only: ReadonlySet<Group>,
  scripts: { empty: string; oneCall: string; fanout: string; cliHome: string },
): Promise<Repetition> {
  const home = <T>(fn: (dir: string) => Promise<T>): Promise<T> => withTempDir(root, fn);
  const rep: Repetition = {
    inProcessFirstCallMs: NaN,
    preStartedFirstCallMs: NaN,
    bareGuestMs: NaN,
    bwrapGuestMs: NaN,
    microvmLimaMs: NaN,
    microvmKrunvmMs: NaN,
    cliMs: NaN,
    cliLauncherMs: NaN,
    cliTaskMs: NaN,
    bareDenoMs: NaN,
    fanoutMs: NaN,
    replayMs: NaN,
    journalWriteMs: NaN,
    bareCommitMs: NaN,
    chain1Ms: NaN,
    chainMs: NaN,
    fanout1Ms: NaN,
    resumeChainMs: NaN,
    noCallMs: NaN,
    hostKb: NaN,
    guestKb: NaN,
    bareKb: NaN,
  };
  if (only.has("start")) {
    rep.bareGuestMs = await timeBareGuest(root, scripts.empty, "off");
    if (BWRAP_OK) rep.bwrapGuestMs = await timeBareGuest(root, scripts.empty, "on");
    rep.inProcessFirstCallMs = await home((dir) => timeFirstCallInProcess(dir));
    if (PRESTARTED_GUEST_OPTIONS) {
      const options = PRESTARTED_GUEST_OPTIONS;
      rep.preStartedFirstCallMs = await home((dir) => timeFirstCallInProcess(dir, options));
    }
  }
  if (only.has("microvm")) {
    rep.microvmLimaMs = await timeMicrovmStandInGuest(root, scripts.empty, "backend_a");
    rep.microvmKrunvmMs = await timeMicrovmStandInGuest(root, scripts.empty, "backend_b");
  }
  if (only.has("cli")) {
    // One SVC_HOME for every CLI run, as a user's shell has: its ledger and caches exist.
    rep.bareDenoMs = await timeBareDeno(scripts.empty);
    rep.cliMs = await timeCli(scripts.cliHome, scripts.oneCall);
    rep.cliLauncherMs = await timeCliLauncher(scripts.cliHome, scripts.oneCall, false);
    rep.cliTaskMs = await timeCliLauncher(scripts.cliHome, scripts.oneCall, true);
  }
  if (only.has("chain") || only.has("replay") || only.has("fanout")) {
    const chain = await home((dir) => timeChainAndReplay(dir));
    Object.assign(rep, {
      chain1Ms: chain.chain1Ms,
      chainMs: chain.chainMs,
      noCallMs: chain.noCallMs,
      resumeChainMs: chain.resumeChainMs,
    });
    rep.bareCommitMs = await home((dir) => timeBareCommit(dir, chain.template));
  }
  if (only.has("fanout")) {
    rep.fanout1Ms = await home((dir) => timeFanout(dir, 1));
    const { liveMs, replayMs } = await home((dir) => timeFanoutAndReplay(dir));
    rep.fanoutMs = liveMs;
    rep.replayMs = replayMs;
    rep.journalWriteMs = await home((dir) => timeJournalWrite(dir));
  }
  if (only.has("memory")) {
    const memory = await home((dir) => peakMemory(dir, scripts.fanout));
    rep.hostKb = memory.hostKb;
    rep.guestKb = memory.guestKb;
    rep.bareKb = await peakMemoryBare(scripts.empty);
  }
  return rep;
}
