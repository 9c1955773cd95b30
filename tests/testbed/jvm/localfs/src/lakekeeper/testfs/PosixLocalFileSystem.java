/*
 * Hadoop's local filesystem (file://) with permissions set in the JVM.
 *
 * Without Hadoop's native library (libhadoop.so, which no registry these
 * machines reach ships), RawLocalFileSystem.setPermission runs the chmod
 * command in a child process: every file and directory created through
 * Hadoop on file:// costs a process start (about 7 ms of CPU measured
 * here: 2.4 ms in the JVM, 4.5 ms in the child), and a test run made
 * about 66,000 of them; and a file status's permission, owner and group are
 * read by running "ls -ld" (about 9,400 a run), for every entry of a located
 * listing. This subclass changes those two things: the same mode is set by
 * java.nio (chmod(2) in the JVM), which is what the native library does (a
 * mode with the sticky, setuid or setgid bit still goes through Hadoop's own
 * code), and a status gets its permission, owner and group from stat(2), as
 * "ls -ld" of its canonical path prints them. Everything else (create, rename, listings, checksum
 * files, modification times) is Hadoop's LocalFileSystem unchanged.
 *
 * Used by the test processes that only make or check data (the engine
 * suite's shared session, the crash worlds' set-up and verify apps, the
 * playbook tests' table creation) and by the test bed's NodeManager and HiveServer2
 * (tests/testbed/testbed/localfs.py); never by a spark-submit of the
 * modules or the CLI, which run Hadoop's own classes as on a cluster.
 *
 *   fs.file.impl                  lakekeeper.testfs.PosixLocalFileSystem
 *   fs.AbstractFileSystem.file.impl  lakekeeper.testfs.PosixLocalFileSystem$Fs
 */
package lakekeeper.testfs;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.UserPrincipal;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.permission.FsPermission;

public class PosixLocalFileSystem extends LocalFileSystem {
    public PosixLocalFileSystem() {
        super(new Raw());
    }

    /** Bits 0-8 of a mode, lowest first, as java.nio names them. */
    private static final PosixFilePermission[] BITS = {
        PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
        PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
        PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ};

    /** RawLocalFileSystem with setPermission in the JVM. */
    public static class Raw extends RawLocalFileSystem {
        @Override
        public void setPermission(Path p, FsPermission permission) throws IOException {
            int mode = permission.toShort();
            if ((mode & ~0777) != 0) {
                super.setPermission(p, permission);  // sticky/setuid/setgid: java.nio cannot set them
                return;
            }
            Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
            for (int i = 0; i < BITS.length; i++) {
                if ((mode & (1 << i)) != 0) {
                    set.add(BITS[i]);
                }
            }
            Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
        }

        @Override
        public FileStatus getFileStatus(Path f) throws IOException {
            return loaded(super.getFileStatus(f));  // listStatus calls it for every entry
        }

        @Override
        public FileStatus getFileLinkStatus(Path f) throws IOException {
            return loaded(super.getFileLinkStatus(f));
        }

        /**
         * Hadoop's status with its permission, owner and group read now by stat(2) instead of
         * "ls -ld" when first asked for; any other status, or one whose attributes cannot be read
         * that way, as Hadoop returned it.
         */
        private FileStatus loaded(FileStatus st) throws IOException {
            if (!st.getClass().getName().endsWith("$DeprecatedRawLocalFileStatus")) {
                return st;
            }
            Map<String, Object> a;
            try {
                // links followed: Hadoop runs "ls -ld" on the canonical path
                a = Files.readAttributes(pathToFile(st.getPath()).toPath(), "unix:mode,owner,group");
            } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
                return st;
            }
            // what FsPermission.valueOf makes of "ls -ld": the nine bits and the sticky bit
            FsPermission perm = new FsPermission((short) (((Integer) a.get("mode")) & 01777));
            return new FileStatus(st.getLen(), st.isDirectory(), st.getReplication(), st.getBlockSize(),
                                  st.getModificationTime(), st.getAccessTime(), perm,
                                  ((UserPrincipal) a.get("owner")).getName(), ((GroupPrincipal) a.get("group")).getName(),
                                  st.isSymlink() ? st.getSymlink() : null, st.getPath());
        }
    }

    /** The same for FileContext (Hadoop's LocalFs builds its RawLocalFileSystem itself). */
    public static class Fs extends ChecksumFs {
        public Fs(URI uri, Configuration conf) throws IOException, URISyntaxException {
            super(new RawFs(uri, conf));
        }
    }

    /** Hadoop's RawLocalFs over {@link Raw}. */
    public static class RawFs extends DelegateToFileSystem {
        public RawFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
            super(uri, new Raw(), conf, "file", false);
        }

        @Override
        public int getUriDefaultPort() {
            return -1;
        }

        @Override
        public FsServerDefaults getServerDefaults(Path f) throws IOException {
            return LocalConfigKeys.getServerDefaults();
        }

        @Override
        @SuppressWarnings("deprecation")
        public FsServerDefaults getServerDefaults() throws IOException {
            return LocalConfigKeys.getServerDefaults();
        }

        @Override
        public boolean isValidName(String src) {
            return true;
        }
    }
}
