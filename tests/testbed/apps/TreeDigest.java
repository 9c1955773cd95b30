// Every path under each root (hidden ones too), one JSON line each, relative to its
// root: {"root": <index>, "rel": "a/b", "dir": false, "len": 3, "sha256": "<of the bytes>"}
// (directories: "dir": true, no length or digest); a missing root: {"root": <index>, "missing": true}.
// One JVM for several trees: what the distcp test compares.
//
//   java -cp <conf dir>:<pyspark>/jars/* TreeDigest.java hdfs://nn:port/src hdfs://nn:port/replica ...
import java.io.InputStream;
import java.net.URI;
import java.security.MessageDigest;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

public class TreeDigest {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        for (int i = 0; i < args.length; i++) {
            Path root = new Path(args[i]);
            FileSystem fs = FileSystem.get(URI.create(args[i]), conf);
            if (!fs.exists(root)) {
                System.out.println("{\"root\": " + i + ", \"missing\": true}");
                continue;
            }
            String prefix = fs.getFileStatus(root).getPath().toUri().getPath();
            walk(fs, root, prefix, i);
        }
    }

    static void walk(FileSystem fs, Path dir, String prefix, int index) throws Exception {
        for (FileStatus st : fs.listStatus(dir)) {
            String rel = st.getPath().toUri().getPath().substring(prefix.length() + 1);
            StringBuilder line = new StringBuilder("{\"root\": ").append(index).append(", \"rel\": \"")
                .append(rel.replace("\\", "\\\\").replace("\"", "\\\"")).append("\", \"dir\": ").append(st.isDirectory());
            if (!st.isDirectory()) {
                line.append(", \"len\": ").append(st.getLen()).append(", \"sha256\": \"").append(sha256(fs, st.getPath()))
                    .append("\"");
            }
            System.out.println(line.append("}"));
            if (st.isDirectory()) {
                walk(fs, st.getPath(), prefix, index);
            }
        }
    }

    static String sha256(FileSystem fs, Path path) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        byte[] buf = new byte[1 << 16];
        try (InputStream in = fs.open(path)) {
            for (int n; (n = in.read(buf)) > 0; ) {
                md.update(buf, 0, n);
            }
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : md.digest()) {
            hex.append(String.format("%02x", b));
        }
        return hex.toString();
    }
}
