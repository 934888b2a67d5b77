package dev.ripple.neo4j;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import inet.ipaddr.IPAddressString;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Config;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.driver.Logging;
import org.neo4j.driver.Session;
import org.neo4j.io.ByteUnit;
import org.neo4j.kernel.internal.Version;

/**
 * Starts an embedded Neo4j Community server with the Bolt connector on 127.0.0.1, for local
 * development, tests and CI. Usage: {@code Launcher HOME_DIR} (Neo4j keeps data/ and logs/ there).
 *
 * <p>Environment: RIPPLE_NEO4J_PORT (default 7687), RIPPLE_NEO4J_PASSWORD (default
 * ripple-dev-password), RIPPLE_NEO4J_PAGECACHE_MB (default 256), RIPPLE_NEO4J_HTTP_PORT (unset:
 * no HTTP connector; set: the HTTP connector on 127.0.0.1 at that port, which serves Neo4j Browser
 * at /browser/ from the org.neo4j.client:neo4j-browser jar on the class path). Prints
 * "READY bolt://..." once an authenticated query over Bolt succeeded (after a "BROWSER http://..."
 * line when HTTP is on); SIGTERM shuts it down cleanly. LOAD CSV can read neither the server's
 * files nor the network (see {@link #start}).
 */
public final class Launcher {
    public static void main(String[] args) throws InterruptedException {
        if (args.length != 1) {
            System.err.println("usage: Launcher HOME_DIR");
            System.exit(2);
        }
        long t0 = System.nanoTime();
        Path home = Path.of(args[0]).toAbsolutePath();
        int port = Integer.parseInt(env("RIPPLE_NEO4J_PORT", "7687"));
        String password = env("RIPPLE_NEO4J_PASSWORD", "ripple-dev-password");
        long pageCacheMb = Long.parseLong(env("RIPPLE_NEO4J_PAGECACHE_MB", "256"));
        String httpPort = env("RIPPLE_NEO4J_HTTP_PORT", "");
        SocketAddress http = httpPort.isEmpty() ? null : new SocketAddress("127.0.0.1", Integer.parseInt(httpPort));
        SocketAddress bolt = new SocketAddress("127.0.0.1", port);
        String uri = "bolt://127.0.0.1:" + port;

        DatabaseManagementService dbms;
        try {
            dbms = start(home, bolt, http, pageCacheMb);
        } catch (Throwable t) { // e.g. port already in use, store locked
            t.printStackTrace();
            Runtime.getRuntime().halt(1);
            return;
        }
        long tStarted = System.nanoTime();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("Shutting down Neo4j");
            dbms.shutdown();
            System.out.println("Neo4j stopped");
            stopped.countDown();
        }, "neo4j-shutdown"));

        try {
            setPassword(dbms, password);
            long tPassword = System.nanoTime();
            boltSelfCheck(uri, password);
            System.out.printf("started %d ms, password %d ms, bolt check %d ms%n", ms(tStarted - t0),
                    ms(tPassword - tStarted), ms(System.nanoTime() - tPassword));
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1); // runs the shutdown hook
        }
        if (http != null) {
            System.out.printf("BROWSER http://127.0.0.1:%d/browser/ (user neo4j, connect to %s)%n", http.getPort(), uri);
        }
        System.out.printf("READY %s (Neo4j %s, %d ms)%n",
                uri, Version.getNeo4jVersion(), ms(System.nanoTime() - t0));
        System.out.flush();
        stopped.await();
    }

    private static DatabaseManagementService start(Path home, SocketAddress bolt, SocketAddress http, long pageCacheMb) {
        return new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, bolt)
                // The routing table handed to neo4j:// clients lists this address.
                .setConfig(BoltConnector.advertised_address, bolt)
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                // The embedded DBMS starts Neo4j's web server (HTTP API, and Neo4j Browser when its
                // jar is on the class path) exactly when the HTTP connector is enabled.
                .setConfig(HttpConnector.enabled, http != null)
                .setConfig(HttpConnector.listen_address, http != null ? http : new SocketAddress("127.0.0.1", 7474))
                .setConfig(HttpConnector.advertised_address, http != null ? http : new SocketAddress("127.0.0.1", 7474))
                .setConfig(HttpsConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.default_listen_address, new SocketAddress("127.0.0.1"))
                .setConfig(GraphDatabaseSettings.default_advertised_address, new SocketAddress("127.0.0.1"))
                // dbms.routing.enabled is *server-side* routing and opens an extra port (7688);
                // client-side routing (neo4j:// URIs, dbms.routing.getRoutingTable) works without it.
                .setConfig(GraphDatabaseSettings.routing_enabled, false)
                // Never phone home (usage data collector): this machine only reaches localhost.
                .setConfig(GraphDatabaseSettings.udc_enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, true)
                .setConfig(GraphDatabaseSettings.auth_minimum_password_length, 1)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pageCacheMb))
                // A development server needs no point-in-time recovery: keep the transaction logs
                // small (the default keeps days of them; a 100k benchmark left 12 GB behind).
                .setConfig(GraphDatabaseSettings.keep_logical_logs, "100M size")
                .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(64))
                // LOAD CSV is not a sandbox: with file URLs allowed, any client that may read could
                // read the server's files (`LOAD CSV FROM 'file:///etc/passwd'`), and with URLs it
                // could make the server fetch from the network. Neither is ever needed here: no
                // file URLs (dbms.security.allow_csv_import_from_file_urls=false), the import root
                // confined to HOME/import should that change, and every address blocked for the
                // URLs Cypher fetches (internal.dbms.cypher_ip_blocklist in 5.26).
                .setConfig(GraphDatabaseSettings.allow_file_urls, false)
                .setConfig(GraphDatabaseSettings.load_csv_file_url_root, home.resolve("import"))
                .setConfig(GraphDatabaseInternalSettings.cypher_ip_blocklist,
                        List.of(new IPAddressString("0.0.0.0/0"), new IPAddressString("::/0")))
                .loadPropertiesFromFile(rawSettings(home, env("RIPPLE_NEO4J_CONF", "")))
                .build();
    }

    /**
     * Neo4j settings by name ("name=value;name=value"), for what this launcher does not set itself,
     * written to HOME/extra.conf (Neo4j reads settings by name from a file).
     */
    private static Path rawSettings(Path home, String spec) {
        StringBuilder conf = new StringBuilder();
        for (String item : spec.split(";")) {
            if (item.isBlank()) {
                continue;
            }
            if (item.indexOf('=') <= 0) {
                throw new IllegalArgumentException("RIPPLE_NEO4J_CONF: expected name=value, got '" + item + "'");
            }
            conf.append(item.trim()).append('\n');
        }
        Path file = home.resolve("extra.conf");
        try {
            java.nio.file.Files.createDirectories(home);
            java.nio.file.Files.writeString(file, conf.toString());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return file;
    }

    /** Sets the password of the built-in 'neo4j' user (Community has user management on system). */
    private static void setPassword(DatabaseManagementService dbms, String password) {
        try {
            dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME).executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
        } catch (RuntimeException e) {
            // Restart with an unchanged password: nothing to do.
            if (!String.valueOf(e.getMessage()).contains("cannot be the same")) {
                throw e;
            }
        }
    }

    /** A real authenticated query over Bolt, the way clients will connect. */
    private static void boltSelfCheck(String uri, String password) {
        // neo4j-java-driver is a dependency of org.neo4j:neo4j itself.
        Config config = Config.builder().withLogging(Logging.none()).build();
        try (Driver driver = GraphDatabase.driver(uri, AuthTokens.basic("neo4j", password), config);
                Session session = driver.session()) {
            session.run("RETURN 1").consume();
        }
    }

    private static long ms(long nanos) {
        return nanos / 1_000_000;
    }

    private static String env(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? dflt : v;
    }
}
