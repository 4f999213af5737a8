// Reads Prometheus text exposition with parse-prometheus-text-format (a parser of the format,
// not of this gateway's output) into values a test can compare before and after a workload.
// @ts-expect-error the package ships no type declarations; its shape is declared below.
import parsePrometheusTextFormatUntyped from 'parse-prometheus-text-format';

interface ParsedSample {
  labels?: Record<string, string>;
  value?: string;
  count?: string;
  sum?: string;
  buckets?: Record<string, string>;
}

interface ParsedFamily {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  metrics: ParsedSample[];
}

const parsePrometheusTextFormat = parsePrometheusTextFormatUntyped as (text: string) => ParsedFamily[];

export interface Scrape {
  families: ParsedFamily[];
  /** A counter's or gauge's value for the samples matching `labels` (summed; 0 when none). */
  value(name: string, labels?: Record<string, string>): number;
  /** A histogram's observation count for the samples matching `labels`. */
  count(name: string, labels?: Record<string, string>): number;
  has(name: string): boolean;
}

const matches = (sample: ParsedSample, labels: Record<string, string>): boolean => Object.entries(labels).every(([key, value]) => sample.labels?.[key] === value);

export function parseScrape(text: string): Scrape {
  const families = parsePrometheusTextFormat(text);
  const family = (name: string): ParsedFamily | undefined => families.find((candidate) => candidate.name === name);
  return {
    families,
    value: (name, labels = {}) => (family(name)?.metrics ?? []).filter((sample) => matches(sample, labels)).reduce((total, sample) => total + Number(sample.value ?? 0), 0),
    count: (name, labels = {}) => (family(name)?.metrics ?? []).filter((sample) => matches(sample, labels)).reduce((total, sample) => total + Number(sample.count ?? 0), 0),
    has: (name) => family(name) !== undefined,
  };
}
