// Reads an HdrHistogram interval log (.hlog) with the Java reference
// implementation's HistogramLogReader, merges the interval histograms and
// prints one JSON object on stdout:
//
//   {"count": N, "min": ..., "max": ..., "p50": ..., "p90": ..., "p99": ..., "p999": ...}
//
// Usage: java -cp HdrHistogram-2.2.2.jar:CLASSES ReadHlog FILE [--tag TAG | --untagged]
//   (normally via tests/interop/run_java.sh FILE [--tag TAG | --untagged])
//
// Without --tag/--untagged every interval histogram of every tag (and the
// untagged ones) is merged. min = getMinValue() (lowest equivalent value),
// max = getMaxValue() and pNN = getValueAtPercentile(NN) (highest equivalent
// value; rank ceil(p/100*count)).
//
// Exit status 0 on success, 1 on failure (message on stderr), 2 on bad usage.

import org.HdrHistogram.AbstractHistogram;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

public class ReadHlog {
    static void fail(String msg) {
        System.err.println("ReadHlog: error: " + msg);
        System.exit(1);
    }

    static void usage(String msg) {
        System.err.println("ReadHlog: " + msg);
        System.err.println("usage: ReadHlog FILE [--tag TAG | --untagged]");
        System.exit(2);
    }

    public static void main(String[] args) {
        Locale.setDefault(Locale.ROOT);
        String file = null;
        String tag = null;
        boolean untagged = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--tag")) {
                if (i + 1 >= args.length) {
                    usage("--tag needs a value");
                }
                tag = args[++i];
            } else if (a.startsWith("--tag=")) {
                tag = a.substring("--tag=".length());
            } else if (a.equals("--untagged")) {
                untagged = true;
            } else if (a.startsWith("-") && !a.equals("-")) {
                usage("unknown option " + a);
            } else if (file == null) {
                file = a;
            } else {
                usage("more than one FILE given");
            }
        }
        if (file == null) {
            usage("missing FILE");
        }
        if (tag != null && untagged) {
            usage("--tag and --untagged are mutually exclusive");
        }
        if (!new File(file).canRead()) {
            fail("cannot open " + file);
        }

        List<AbstractHistogram> selected = new ArrayList<>();
        int seen = 0;
        try {
            HistogramLogReader reader = new HistogramLogReader(file);
            try {
                EncodableHistogram eh;
                while ((eh = reader.nextIntervalHistogram()) != null) {
                    seen++;
                    String t = eh.getTag();
                    if (tag != null && !tag.equals(t)) {
                        continue;
                    }
                    if (untagged && t != null) {
                        continue;
                    }
                    if (!(eh instanceof AbstractHistogram)) {
                        fail("interval histogram " + seen + " is a " + eh.getClass().getSimpleName()
                                + " (only integer-valued histograms are supported)");
                    }
                    selected.add((AbstractHistogram) eh);
                }
            } finally {
                reader.close();
            }
        } catch (Exception | AssertionError e) {
            fail("cannot read " + file + ": " + e);
        }
        if (seen == 0) {
            fail("no interval histograms found in " + file);
        }
        if (selected.isEmpty()) {
            fail("no interval histograms match the tag selection in " + file + " (" + seen + " found)");
        }

        Histogram acc = null;
        try {
            long lowest = Long.MAX_VALUE;
            long highest = 0;
            int digits = 0;
            for (AbstractHistogram h : selected) {
                lowest = Math.min(lowest, h.getLowestDiscernibleValue());
                highest = Math.max(highest, h.getHighestTrackableValue());
                digits = Math.max(digits, h.getNumberOfSignificantValueDigits());
            }
            acc = new Histogram(lowest, Math.max(highest, 2 * lowest), digits);
            acc.setAutoResize(true);
            for (AbstractHistogram h : selected) {
                acc.add(h);
            }
        } catch (Exception e) {
            fail("cannot merge histograms from " + file + ": " + e);
        }

        long n = acc.getTotalCount();
        String out;
        if (n == 0) {
            out = "{\"count\": 0, \"min\": 0, \"max\": 0, \"p50\": 0, \"p90\": 0, \"p99\": 0, \"p999\": 0}";
        } else {
            out = String.format(Locale.ROOT,
                    "{\"count\": %d, \"min\": %d, \"max\": %d, \"p50\": %d, \"p90\": %d, \"p99\": %d, \"p999\": %d}",
                    n, acc.getMinValue(), acc.getMaxValue(),
                    acc.getValueAtPercentile(50.0), acc.getValueAtPercentile(90.0),
                    acc.getValueAtPercentile(99.0), acc.getValueAtPercentile(99.9));
        }
        System.out.println(out);
    }
}
