// Writes a deterministic HdrHistogram interval log (.hlog) with an OLD Java
// HdrHistogram, whose histograms carry the encodings before V2: 1.x writes
// V0 (cookie 0x1c849389 in a log), 2.0.1 - 2.1.6 write V1 (0x1c849382) -
// the libraries jHiccup 2.0.2 (HdrHistogram 1.1.4) and 2.0.6 (2.1.6) used.
// Also writes the writing library's own figures for it (.expected.json).
//
// Usage (see tests/fixtures/README.md for the exact command):
//   tests/interop/make_old_hlog.sh VERSION OUTDIR
//   which runs: java -cp HdrHistogram-VERSION.jar:jaxb-api-2.3.1.jar:OUT MakeOldHlog OUTDIR VERSION
// (these versions print base64 with javax.xml.bind, gone from the JDK since 11)
//
// One source for every version: 1.x keeps the statistics on
// getHistogramData(), 2.x on the histogram, so they are called by name.
// Values are in nanoseconds: 5 intervals of 1 s, 1000 values each, lognormal
// with a tail, from java.util.Random seed 20140513 and StrictMath only, so
// they are the same on every JVM. Untagged (these versions have no tags).

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;

import java.io.FileOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.util.Locale;
import java.util.Random;
import java.util.TimeZone;

public class MakeOldHlog {
    static final long HIGHEST = 3_600_000_000_000L; // 1 hour in ns
    static final int DIGITS = 3;
    static final long START_MS = 1_400_000_000_000L; // 2014-05-13T16:53:20Z
    static final int INTERVALS = 5;
    static final long INTERVAL_MS = 1000;
    static final int PER_INTERVAL = 1000; // n = 5000: p*n is whole, so every rank rule agrees

    static long sample(Random r) {
        double v = 50_000 * StrictMath.exp(0.6 * r.nextGaussian());
        if (r.nextDouble() < 0.01) {
            v *= 40;
        }
        return Math.max(1, (long) v);
    }

    /** Calls a public method returning a number, by name (long or double arguments). */
    static long call(Object target, String name, Object... args) throws Exception {
        Class<?>[] types = new Class<?>[args.length];
        for (int i = 0; i < args.length; i++) {
            types[i] = (args[i] instanceof Double) ? double.class : long.class;
        }
        Method m = target.getClass().getMethod(name, types);
        return ((Number) m.invoke(target, args)).longValue();
    }

    /** Where the statistics live: getHistogramData() in 1.x, the histogram in 2.x. */
    static Object statistics(Histogram h) throws Exception {
        try {
            return h.getClass().getMethod("getHistogramData").invoke(h);
        } catch (NoSuchMethodException e) {
            return h;
        }
    }

    /**
     * The figures as the library answers them ("library"), and as bucket
     * tops ("top": max and percentiles through highestEquivalentValue, min
     * as the lowest equivalent value) - HdrHistogram 2.x's convention, which
     * 1.x did not follow (it answered bucket bottoms).
     */
    static String figures(Histogram h, boolean top) throws Exception {
        Object s = statistics(h);
        long[] v = {
            call(s, "getMaxValue"),
            call(s, "getValueAtPercentile", 50.0),
            call(s, "getValueAtPercentile", 90.0),
            call(s, "getValueAtPercentile", 99.0),
            call(s, "getValueAtPercentile", 99.9),
        };
        if (top) {
            for (int i = 0; i < v.length; i++) {
                v[i] = call(h, "highestEquivalentValue", v[i]);
            }
        }
        return String.format(Locale.ROOT,
                "{\"count\": %d, \"min\": %d, \"max\": %d, \"p50\": %d, \"p90\": %d, \"p99\": %d, \"p999\": %d}",
                call(s, "getTotalCount"), call(s, "getMinValue"), v[0], v[1], v[2], v[3], v[4]);
    }

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"));
        if (args.length != 2) {
            System.err.println("usage: MakeOldHlog OUTDIR HDRHISTOGRAM_VERSION");
            System.exit(2);
        }
        String outDir = args[0];
        String version = args[1];
        String name = "java-" + version;

        Random rnd = new Random(20140513L);
        Histogram all = new Histogram(HIGHEST, DIGITS);
        try (PrintStream log = new PrintStream(new FileOutputStream(outDir + "/" + name + ".hlog"), false, "UTF-8")) {
            HistogramLogWriter w = new HistogramLogWriter(log);
            w.outputComment("[Logged with MakeOldHlog.java (cauda tests/interop/java), HdrHistogram "
                    + version + ", values in ns]");
            w.outputLogFormatVersion();
            w.outputStartTime(START_MS);
            w.outputLegend();
            for (int i = 0; i < INTERVALS; i++) {
                long s = START_MS + i * INTERVAL_MS;
                Histogram h = new Histogram(HIGHEST, DIGITS);
                h.setStartTimeStamp(s);
                h.setEndTimeStamp(s + INTERVAL_MS);
                for (int j = 0; j < PER_INTERVAL; j++) {
                    h.recordValue(sample(rnd));
                }
                w.outputIntervalHistogram(h);
                all.add(h);
            }
        }

        StringBuilder sb = new StringBuilder();
        sb.append("{\n");
        sb.append("  \"generator\": \"tests/interop/java/MakeOldHlog.java\",\n");
        sb.append("  \"library\": \"org.hdrhistogram:HdrHistogram:").append(version).append(" (Java)\",\n");
        sb.append("  \"unit\": \"ns\",\n");
        sb.append("  \"intervals\": ").append(INTERVALS).append(",\n");
        sb.append("  \"note\": \"figures of the merged histogram computed by the writing library: "
                + "library = its own answers (getTotalCount, getMinValue, getMaxValue, getValueAtPercentile(50/90/99/99.9)); "
                + "top = the same with max and percentiles passed through highestEquivalentValue (HdrHistogram 2.x's convention; 1.x answered bucket bottoms)\",\n");
        sb.append("  \"library_figures\": ").append(figures(all, false)).append(",\n");
        sb.append("  \"top\": ").append(figures(all, true)).append("\n");
        sb.append("}\n");
        try (PrintStream ej = new PrintStream(new FileOutputStream(outDir + "/" + name + ".expected.json"), false, "UTF-8")) {
            ej.print(sb);
        }
    }
}
