import Foundation

/// The systemd user units that supervise ferryd (docs/OPERATIONS.md): `ferryd.socket` listens on the
/// control socket and starts `ferryd.service` at the first connection, handing the socket over
/// (`LISTEN_FDS`); the service restarts ferryd when it dies. `contrib/systemd/` holds them as
/// ``render(ferryd:socket:ferryHome:)`` writes them for `/usr/local/bin/ferryd` (a test keeps the two
/// the same). Pure.
public enum SystemdUnits {
    /// The default socket of a user's ferryd in unit syntax: `$XDG_RUNTIME_DIR/ferry/ferryd.sock`.
    public static let defaultSocket = "%t/ferry/ferryd.sock"

    /// The two units for the ferryd at `ferryd`, listening on `socket`; `ferryHome` sets `FERRY_HOME`
    /// for the daemon (an isolated daemon), nil leaves the default places.
    public static func render(
        ferryd: String,
        socket: String = defaultSocket,
        ferryHome: String? = nil
    ) -> (service: String, socket: String) {
        let environment = ferryHome.map { "Environment=FERRY_HOME=\(quoted($0))\n" } ?? ""
        let service = """
            # Ferry's per-user transfer daemon (docs/OPERATIONS.md). Installed by `ferry daemon install`.
            [Unit]
            Description=Ferry background transfers (ferryd)
            Requires=ferryd.socket
            After=ferryd.socket network-online.target

            [Service]
            Type=simple
            ExecStart=\(quoted(ferryd))
            \(environment)# Transfers stop at a checkpoint on SIGTERM; they continue at the next start.
            KillSignal=SIGTERM
            TimeoutStopSec=30
            Restart=on-failure
            RestartSec=1
            # The daemon logs JSON lines to its own file (ferry daemon log); the journal gets what it prints.
            StandardOutput=journal
            StandardError=journal

            [Install]
            WantedBy=default.target

            """
        let socketUnit = """
            # The control socket of ferryd.service: systemd listens and starts ferryd at the first
            # connection (socket activation). Installed by `ferry daemon install`.
            [Unit]
            Description=Ferry background transfers (ferryd control socket)

            [Socket]
            ListenStream=\(socket)
            SocketMode=0600
            DirectoryMode=0700
            RemoveOnStop=yes

            [Install]
            WantedBy=sockets.target

            """
        return (service, socketUnit)
    }

    /// A value for a unit file: quoted when it holds a space, with `\` and `"` escaped, `%` doubled.
    public static func quoted(_ value: String) -> String {
        let escaped = value.replacingOccurrences(of: "%", with: "%%")
        guard escaped.contains(where: { $0 == " " || $0 == "\t" || $0 == "\"" || $0 == "\\" }) else { return escaped }
        return "\"" + escaped.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
