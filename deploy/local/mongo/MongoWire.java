// The local stack's Mongo-wire server: mongo-java-server with its H2 (MVStore) backend, in one
// file, persistent across restarts. Not a production database (production runs MongoDB).
//
// Usage: java -cp <libs>/*:<classes> MongoWire <store file> <host> <port>
//
// Compiled once by deploy/local/services.py (javac) and started by the stack.

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import java.util.List;

public final class MongoWire {
    private MongoWire() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: MongoWire <store file> <host> <port>");
            System.exit(2);
        }
        H2Backend backend = new H2Backend(args[0]);
        // mongo-java-server reports MongoDB 4.0 (wire version 7); PyMongo 4.x refuses servers
        // below wire version 9 (MongoDB 4.4). Footfall uses nothing 4.4 added (no $unionWith,
        // no hint on updates, no mirrored reads), so the server is announced as 4.4; its
        // command set is unchanged, and an unsupported command is still an error.
        backend.version(new MongoVersion() {
            @Override
            public List<Integer> getVersionArray() {
                return List.of(4, 4, 0);
            }

            @Override
            public int getWireVersion() {
                return 9;
            }
        });
        MongoServer server = new MongoServer(backend);
        server.bind(args[1], Integer.parseInt(args[2]));
        // SIGTERM (the stack's stop) closes the store, which writes what the last
        // auto-commit (at most ~1 s old) has not.
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdown, "mongo-wire-shutdown"));
        System.err.println("mongo-wire: listening on " + args[1] + ":" + args[2] + ", store " + args[0]);
        Thread.currentThread().join();
    }
}
