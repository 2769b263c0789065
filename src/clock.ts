// Time is injected, never read from globals in logic that tests need to steer.
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function isoNow(clock: Clock = systemClock): string {
  return new Date(clock.now()).toISOString();
}
