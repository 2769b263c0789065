// When a notification that could not be handed to the relay is tried again: quickly at first
// (a relay restart), then hourly; after about two days it is given up and logged loudly.
// Rules as data, on the one schedule function of src/retry-schedule.ts.
import { retryDelayMs } from "../retry-schedule.js";

export const NOTIFY_RETRY_STEPS_MS: readonly number[] = [30_000, 120_000, 600_000, 1_800_000, 3_600_000];
export const NOTIFY_MAX_AGE_MS = 48 * 3_600_000;

/**
 * The time of the next try after `attempts` failed tries (1 = the first failed), or null when the
 * notification, created at `createdAt`, is too old to try again.
 */
export function nextNotifyAttempt(
  attempts: number,
  createdAt: number,
  now: number,
  steps = NOTIFY_RETRY_STEPS_MS,
  maxAgeMs = NOTIFY_MAX_AGE_MS,
  random: () => number = Math.random,
): Date | null {
  // up to 10 % later, never earlier: a relay restart is not waited out sooner than the step
  const next = now + retryDelayMs(steps, attempts, { spread: [1, 1.1], random });
  if (next - createdAt > maxAgeMs) return null;
  return new Date(next);
}
