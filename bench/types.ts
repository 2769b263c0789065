// One row of the benchmark report: a figure, its value, and what it is measured against.
export interface BenchResult {
  figure: string;
  value: number;
  unit: string;
  /** the peer or ceiling it is compared with (Postfix, smtp-sink, a goal...) */
  peer?: { label: string; value: number };
  /** e.g. "<= 1.5" or ">= 570" */
  goal?: string;
  /** printed under the table, e.g. why a peer is a fallback and how to install the real one */
  note?: string;
}
