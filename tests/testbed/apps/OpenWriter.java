// A writer that keeps one HDFS file open, as Flume's HDFS sink does with its
// FlumeData.<n>.tmp: every line read from stdin is written and hflush()ed
// (visible to readers, the file still under construction on the NameNode);
// "CLOSE" closes the file and exits. Answers each command on stdout.
//
//   java -cp <conf dir>:<hadoop jars> OpenWriter.java hdfs://nn:port/path/FlumeData.1700000000000.tmp
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

public class OpenWriter {
    public static void main(String[] args) throws Exception {
        Path path = new Path(args[0]);
        FileSystem fs = FileSystem.newInstance(URI.create(args[0]), new Configuration());
        FSDataOutputStream out = fs.create(path, false);
        System.out.println("open");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("CLOSE")) {
                break;
            }
            out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            out.hflush();
            System.out.println("written");
        }
        out.close();
        fs.close();
        System.out.println("closed");
    }
}
