/*
 * The Hadoop 3 test bed's HDFS + YARN in one JVM: MiniDFSCluster (one NameNode,
 * N DataNodes) and MiniYARNCluster (one ResourceManager, M NodeManagers) from
 * hadoop-client-minicluster, all on 127.0.0.1.
 *
 * Started by tests/testbed/testbed/hadoop3.py (compiled by javac into the cache
 * on first use). Configuration comes from core-site.xml, hdfs-site.xml and
 * yarn-site.xml on the class path (the bed's conf/hadoop); arguments:
 *
 *   nn-port=P        NameNode RPC port (chosen by the bed)
 *   base=DIR         data directory (dfs/ and yarn/ under it)
 *   datanodes=N      number of DataNodes
 *   nodemanagers=M   number of NodeManagers (0: no YARN)
 *   ec=POLICY,...    erasure coding policies to enable
 *   out=DIR          where to write the effective configuration for clients
 *
 * Writes out/effective.properties (addresses the bed reads), out/core-site.xml,
 * out/hdfs-site.xml and out/yarn-site.xml (the whole effective configuration,
 * for reading), then logs one line "LAKEKEEPER-MINICLUSTER READY (<seconds> s)".
 * SIGTERM stops YARN (and its containers).
 */
import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.crypto.key.KeyProvider;
import org.apache.hadoop.crypto.key.KeyProviderFactory;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

public final class LakekeeperMiniCluster {
    private LakekeeperMiniCluster() {
    }

    private static final long T0 = System.nanoTime();
    private static final long STOP_MS = 3000;

    private static void log(String msg) {
        System.err.printf("LAKEKEEPER-MINICLUSTER %s (%.1f s)%n", msg, (System.nanoTime() - T0) / 1e9);
        System.err.flush();
    }

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) {
            // the services' non-daemon threads would keep a failed start alive
            log("FAILED: " + e);
            e.printStackTrace();
            Runtime.getRuntime().halt(1);
        }
    }

    private static void run(String[] args) throws Exception {
        Map<String, String> a = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("expected key=value, got " + arg);
            }
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        int nnPort = Integer.parseInt(a.get("nn-port"));
        File base = new File(a.get("base"));
        int dataNodes = Integer.parseInt(a.getOrDefault("datanodes", "3"));
        int nodeManagers = Integer.parseInt(a.getOrDefault("nodemanagers", "1"));
        String ec = a.getOrDefault("ec", "");
        File out = new File(a.get("out"));
        out.mkdirs();

        // the test processes' file:// (tests/testbed/testbed/localfs.py), when its directory is on the class path:
        // the NodeManagers localize every container's files through it (a chmod process per file without it)
        if (LakekeeperMiniCluster.class.getClassLoader().getResource("lakekeeper-localfs.xml") != null) {
            Configuration.addDefaultResource("lakekeeper-localfs.xml");
            log("file:// through " + new Configuration().get("fs.file.impl"));
        }
        Configuration conf = new YarnConfiguration(new HdfsConfiguration());

        // the key of the jceks key provider: made here, before the NameNode reads the store
        String keyName = a.get("key");
        String provider = conf.get("hadoop.security.key.provider.path");
        if (keyName != null && provider != null) {
            KeyProvider kp = KeyProviderFactory.get(new URI(provider), conf);
            if (kp.getMetadata(keyName) == null) {
                kp.createKey(keyName, KeyProvider.options(conf));
                kp.flush();
            }
            log("key " + keyName + " in " + provider);
        }

        // YARN starts in a thread of its own while HDFS starts (on an idle machine the two
        // overlap; nothing in the ResourceManager or NodeManager needs HDFS to start)
        final Configuration yconf = new YarnConfiguration(conf);
        yconf.set("fs.defaultFS", "hdfs://127.0.0.1:" + nnPort);
        System.setProperty("test.build.data", new File(base, "yarn").getAbsolutePath());
        final MiniYARNCluster yarn = nodeManagers > 0
            // the NodeManagers without their web UI (containers' logs are files in the bed)
            ? new MiniYARNCluster("lakekeeper", nodeManagers, 1, 1, false) : null;
        final Throwable[] yarnFailure = new Throwable[1];
        Thread yarnStarter = new Thread(() -> {
            try {
                startYarn(yarn, yconf, nodeManagers);
            } catch (Throwable e) {
                yarnFailure[0] = e;
            }
        }, "lakekeeper-yarn-start");
        if (yarn != null) {
            yarnStarter.start();
        }

        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(base, "dfs").getAbsolutePath());
        final MiniDFSCluster dfs = new MiniDFSCluster.Builder(conf)
            .nameNodePort(nnPort)
            .numDataNodes(dataNodes)
            .format(true)
            .checkExitOnShutdown(false)
            .build();
        dfs.waitActive();
        DistributedFileSystem fs = dfs.getFileSystem();
        for (String policy : ec.split(",")) {
            if (!policy.isEmpty()) {
                fs.enableErasureCodingPolicy(policy);
            }
        }
        log("HDFS up: NameNode hdfs://127.0.0.1:" + dfs.getNameNodePort() + ", " + dfs.getDataNodes().size() + " DataNodes"
            + (ec.isEmpty() ? "" : ", erasure coding policies enabled: " + ec));
        if (yarn != null) {
            yarnStarter.join();
            if (yarnFailure[0] != null) {
                throw new IllegalStateException("YARN did not start", yarnFailure[0]);
            }
        }

        // SIGTERM: the NodeManagers stop their containers (at most STOP_MS, then the JVM halts:
        // a stop of MiniYARNCluster can wait far longer, and the bed kills any container left
        // over with the JVM's other descendants); HDFS needs no orderly stop (its data is
        // thrown away with the bed, and MiniDFSCluster.shutdown() fails inside a shutdown hook)
        final MiniYARNCluster yarnFinal = yarn;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            log("stopping");
            if (yarnFinal != null) {
                Thread stopper = new Thread(() -> {
                    try {
                        yarnFinal.stop();
                    } catch (Throwable e) {
                        log("YARN stop: " + e);
                    }
                }, "lakekeeper-yarn-stop");
                stopper.setDaemon(true);
                stopper.start();
                try {
                    stopper.join(STOP_MS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                log(stopper.isAlive() ? "YARN still stopping after " + STOP_MS + " ms; halting" : "YARN stopped");
            }
            Runtime.getRuntime().halt(0);
        }, "lakekeeper-minicluster-stop"));

        Configuration hconf = dfs.getConfiguration(0);
        Map<String, String> eff = new TreeMap<>();
        eff.put("fs.defaultFS", "hdfs://127.0.0.1:" + dfs.getNameNodePort());
        eff.put("dfs.namenode.http-address", hconf.get("dfs.namenode.http-address"));
        eff.put("datanodes", Integer.toString(dfs.getDataNodes().size()));
        for (int i = 0; i < dfs.getDataNodes().size(); i++) {
            eff.put("datanode." + i + ".address", dfs.getDataNodes().get(i).getXferAddress().toString());
        }
        writeXml(hconf, new File(out, "hdfs-site.xml"));
        if (yarn != null) {
            Configuration y = yarn.getConfig();
            for (String k : new String[] {
                YarnConfiguration.RM_ADDRESS, YarnConfiguration.RM_SCHEDULER_ADDRESS,
                YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS, YarnConfiguration.RM_ADMIN_ADDRESS,
                YarnConfiguration.RM_WEBAPP_ADDRESS}) {
                eff.put(k, y.get(k));
            }
            eff.put("nodemanagers", Integer.toString(nodeManagers));
            for (int i = 0; i < nodeManagers; i++) {
                Configuration nc = yarn.getNodeManager(i).getConfig();
                eff.put("nodemanager." + i + ".address", yarn.getNodeManager(i).getNMContext().getNodeId().toString());
                eff.put("nodemanager." + i + ".local-dirs", nc.get(YarnConfiguration.NM_LOCAL_DIRS));
                eff.put("nodemanager." + i + ".log-dirs", nc.get(YarnConfiguration.NM_LOG_DIRS));
            }
            writeXml(y, new File(out, "yarn-site.xml"));
        }
        File tmp = new File(out, "effective.properties.tmp");
        try (Writer w = new OutputStreamWriter(new FileOutputStream(tmp), StandardCharsets.UTF_8)) {
            for (Map.Entry<String, String> e : eff.entrySet()) {
                w.write(e.getKey() + "=" + e.getValue() + "\n");
            }
        }
        if (!tmp.renameTo(new File(out, "effective.properties"))) {
            throw new IllegalStateException("cannot write " + out + "/effective.properties");
        }
        log("READY");
        Thread.currentThread().join();
    }

    private static void startYarn(MiniYARNCluster yarn, Configuration yconf, int nodeManagers) throws Exception {
        yarn.init(yconf);
        yarn.start();
        String rm = yarn.getConfig().get(YarnConfiguration.RM_ADDRESS);
        long deadline = System.currentTimeMillis() + 60_000;
        while (rm == null || rm.endsWith(":0")) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("ResourceManager address still " + rm);
            }
            Thread.sleep(100);
            rm = yarn.getConfig().get(YarnConfiguration.RM_ADDRESS);
        }
        if (!yarn.waitForNodeManagersToConnect(60_000)) {
            throw new IllegalStateException("NodeManagers did not register with the ResourceManager");
        }
        log("YARN up: ResourceManager " + rm + ", " + nodeManagers + " NodeManagers");
    }

    private static void writeXml(Configuration c, File f) throws Exception {
        try (OutputStream o = new FileOutputStream(f)) {
            c.writeXml(o);
        }
    }
}
