// Writes a deterministic HdrHistogram interval log (.hlog) with the Java
// reference implementation (org.hdrhistogram:HdrHistogram), plus the
// percentile distribution (.hgrm) and the library's own answers
// (.expected.json) for cauda's importer tests.
//
// Usage (see tests/fixtures/README.md for the exact command):
//   javac -cp HdrHistogram-2.2.2.jar -d OUT MakeHlog.java
//   java -cp HdrHistogram-2.2.2.jar:OUT MakeHlog tests/fixtures/hdr
//
// Values are in nanoseconds. Five 1-second intervals; in each interval three
// histograms are written: untagged, Tag=read and Tag=write.
// Only StrictMath is used so the values are bit-for-bit reproducible.

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;

import java.io.FileOutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TimeZone;

public class MakeHlog {
    static final long HIGHEST = 3_600_000_000_000L; // 1 hour in ns
    static final int DIGITS = 3;
    static final long START_MS = 1_700_000_000_000L; // 2023-11-14T22:13:20Z
    static final int INTERVALS = 5;
    static final long INTERVAL_MS = 1000;

    // lognormal-ish sample in ns: median `medianNs`, shape `sigma`,
    // with probability `tailP` multiplied by `tailMul`.
    static long sample(Random r, double medianNs, double sigma, double tailP, double tailMul) {
        double v = medianNs * StrictMath.exp(sigma * r.nextGaussian());
        if (r.nextDouble() < tailP) {
            v *= tailMul;
        }
        long x = (long) v;
        return Math.max(1, x);
    }

    static String stats(Histogram h) {
        return String.format(Locale.ROOT,
                "{\"count\": %d, \"min\": %d, \"max\": %d, \"p50\": %d, \"p90\": %d, \"p99\": %d, \"p999\": %d}",
                h.getTotalCount(), h.getMinValue(), h.getMaxValue(),
                h.getValueAtPercentile(50.0), h.getValueAtPercentile(90.0),
                h.getValueAtPercentile(99.0), h.getValueAtPercentile(99.9));
    }

    static String rawStats(List<Long> raw) {
        List<Long> s = new ArrayList<>(raw);
        Collections.sort(s);
        int n = s.size();
        long[] qPerMille = {500, 900, 990, 999};
        long[] v = new long[qPerMille.length];
        for (int i = 0; i < qPerMille.length; i++) {
            // exact order statistic sorted[ceil(q*n)-1], in integer arithmetic
            long k = (qPerMille[i] * n + 999) / 1000;
            v[i] = s.get((int) Math.max(1, k) - 1);
        }
        return String.format(Locale.ROOT,
                "{\"count\": %d, \"min\": %d, \"max\": %d, \"p50\": %d, \"p90\": %d, \"p99\": %d, \"p999\": %d}",
                n, s.get(0), s.get(n - 1), v[0], v[1], v[2], v[3]);
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"));
        String outDir = args.length > 0 ? args[0] : ".";

        Random rnd = new Random(20231114L);
        String[] tags = {null, "read", "write"};
        String[] keys = {"untagged", "read", "write"};
        double[] median = {60_000, 40_000, 120_000};
        double[] sigma = {0.5, 0.4, 0.6};
        double[] tailP = {0.005, 0.002, 0.01};
        double[] tailMul = {20, 50, 10};
        int[] perInterval = {1000, 800, 400};

        Histogram all = new Histogram(HIGHEST, DIGITS);
        Map<String, Histogram> perTag = new LinkedHashMap<>();
        Map<String, List<Long>> rawPerTag = new LinkedHashMap<>();
        List<Long> rawAll = new ArrayList<>();
        for (String k : keys) {
            perTag.put(k, new Histogram(HIGHEST, DIGITS));
            rawPerTag.put(k, new ArrayList<>());
        }

        try (PrintStream log = new PrintStream(new FileOutputStream(outDir + "/java.hlog"), false, "UTF-8")) {
            HistogramLogWriter w = new HistogramLogWriter(log);
            w.outputComment("[Logged with MakeHlog.java (cauda tests/interop/java), HdrHistogram 2.2.2, values in ns]");
            w.outputLogFormatVersion();
            w.outputStartTime(START_MS);
            w.setBaseTime(START_MS);
            w.outputBaseTime(START_MS);
            w.outputLegend();
            for (int i = 0; i < INTERVALS; i++) {
                long s = START_MS + i * INTERVAL_MS;
                for (int t = 0; t < tags.length; t++) {
                    Histogram h = new Histogram(HIGHEST, DIGITS);
                    h.setStartTimeStamp(s);
                    h.setEndTimeStamp(s + INTERVAL_MS);
                    if (tags[t] != null) {
                        h.setTag(tags[t]);
                    }
                    for (int j = 0; j < perInterval[t]; j++) {
                        long v = sample(rnd, median[t], sigma[t], tailP[t], tailMul[t]);
                        h.recordValue(v);
                        rawAll.add(v);
                        rawPerTag.get(keys[t]).add(v);
                    }
                    w.outputIntervalHistogram(h);
                    all.add(h);
                    perTag.get(keys[t]).add(h);
                }
            }
        }

        try (PrintStream hgrm = new PrintStream(new FileOutputStream(outDir + "/java.hgrm"), false, "UTF-8")) {
            all.outputPercentileDistribution(hgrm, 1000.0);
        }

        StringBuilder sb = new StringBuilder();
        sb.append("{\n");
        sb.append("  \"generator\": \"tests/interop/java/MakeHlog.java\",\n");
        sb.append("  \"library\": \"org.hdrhistogram:HdrHistogram:2.2.2 (Java)\",\n");
        sb.append("  \"unit\": \"ns\",\n");
        sb.append("  \"intervals\": ").append(INTERVALS).append(",\n");
        sb.append("  \"histograms_per_interval\": 3,\n");
        sb.append("  \"note\": \"all/tags: as reported by Java Histogram (getTotalCount, getMinValue, getMaxValue, getValueAtPercentile(50/90/99/99.9)) on the in-memory merged histogram; min is lowestEquivalentValue, max and percentiles are highestEquivalentValue of the bucket. raw_exact: exact statistics of the recorded raw values, order statistic sorted[ceil(q*n)-1].\",\n");
        sb.append("  \"all\": ").append(stats(all)).append(",\n");
        sb.append("  \"tags\": {\n");
        int i = 0;
        for (String k : keys) {
            sb.append("    \"").append(k).append("\": ").append(stats(perTag.get(k)));
            sb.append(++i < keys.length ? ",\n" : "\n");
        }
        sb.append("  },\n");
        sb.append("  \"raw_exact\": {\n");
        sb.append("    \"all\": ").append(rawStats(rawAll)).append(",\n");
        i = 0;
        for (String k : keys) {
            sb.append("    \"").append(k).append("\": ").append(rawStats(rawPerTag.get(k)));
            sb.append(++i < keys.length ? ",\n" : "\n");
        }
        sb.append("  }\n");
        sb.append("}\n");
        try (PrintStream ej = new PrintStream(new FileOutputStream(outDir + "/java.expected.json"), false, "UTF-8")) {
            ej.print(sb);
        }
    }
}
