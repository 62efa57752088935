// libsecret (the Secret Service client) and the little GLib glue Swift cannot write itself:
// GHashTables of strings, GVariant building, GError fields and GObject casts.
#ifndef MSAL_CLIBSECRET_SHIM_H
#define MSAL_CLIBSECRET_SHIM_H

// The D-Bus-path functions (secret-paths.h): one search and one GetSecrets call for many items.
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#include <gio/gio.h>

/// Opens a private connection to the Secret Service with a transfer session (encrypted when the
/// service supports it). Returns a new reference, or NULL with `error` set.
static inline SecretService *msal_secret_service_open(GCancellable *cancellable, GError **error) {
    return secret_service_open_sync(SECRET_TYPE_SERVICE, NULL, SECRET_SERVICE_OPEN_SESSION, cancellable, error);
}

/// Drops one reference of a GObject (SecretService, GCancellable).
static inline void msal_object_unref(gpointer object) {
    if (object != NULL) g_object_unref(object);
}

/// A new, empty table of string attributes (keys and values owned by the table).
static inline GHashTable *msal_attributes_new(void) {
    return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

/// Sets one attribute (copies both strings).
static inline void msal_attributes_set(GHashTable *attributes, const char *name, const char *value) {
    g_hash_table_replace(attributes, g_strdup(name), g_strdup(value));
}

/// The properties of a new item: its label and its attributes (a{ss}), as CreateItem takes them.
static inline GHashTable *msal_item_properties_new(const char *label, GHashTable *attributes) {
    GHashTable *properties = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_variant_unref);
    GVariantBuilder builder;
    g_variant_builder_init(&builder, G_VARIANT_TYPE("a{ss}"));
    GHashTableIter iter;
    gpointer name, value;
    g_hash_table_iter_init(&iter, attributes);
    while (g_hash_table_iter_next(&iter, &name, &value)) {
        g_variant_builder_add(&builder, "{ss}", (const char *)name, (const char *)value);
    }
    g_hash_table_insert(properties, g_strdup("org.freedesktop.Secret.Item.Label"), g_variant_ref_sink(g_variant_new_string(label)));
    g_hash_table_insert(properties, g_strdup("org.freedesktop.Secret.Item.Attributes"), g_variant_ref_sink(g_variant_builder_end(&builder)));
    return properties;
}

/// Reads the `Locked` property of the collection at `path` with one D-Bus call that never starts a
/// service and never prompts. Returns 1 (locked), 0 (unlocked) or -1 with `error` set.
static inline int msal_collection_locked(SecretService *service, const char *path, int timeout_ms,
                                         GCancellable *cancellable, GError **error) {
    GDBusProxy *proxy = G_DBUS_PROXY(service);
    GVariant *reply = g_dbus_connection_call_sync(
        g_dbus_proxy_get_connection(proxy), g_dbus_proxy_get_name(proxy), path,
        "org.freedesktop.DBus.Properties", "Get",
        g_variant_new("(ss)", "org.freedesktop.Secret.Collection", "Locked"),
        G_VARIANT_TYPE("(v)"), G_DBUS_CALL_FLAGS_NO_AUTO_START, timeout_ms, cancellable, error);
    if (reply == NULL) return -1;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    int result = -1;
    if (g_variant_is_of_type(value, G_VARIANT_TYPE_BOOLEAN)) {
        result = g_variant_get_boolean(value) ? 1 : 0;
    } else {
        g_set_error_literal(error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_SIGNATURE,
                            "The collection's Locked property is not a boolean");
    }
    g_variant_unref(value);
    g_variant_unref(reply);
    return result;
}

/// The name of an error's domain (e.g. "g-io-error-quark").
static inline const char *msal_error_domain(const GError *error) {
    return g_quark_to_string(error->domain);
}

/// Whether the error is a local GIO error (then `code` is a GIOErrorEnum).
static inline int msal_error_is_io(const GError *error) {
    return error->domain == G_IO_ERROR;
}

/// The D-Bus error name behind an error (e.g. "org.freedesktop.Secret.Error.IsLocked"), or NULL:
/// the remote name when the service sent one, else the registered name of a GDBus or libsecret
/// error. Free with g_free.
static inline char *msal_error_dbus_name(const GError *error) {
    char *remote = g_dbus_error_get_remote_error(error);
    if (remote != NULL) return remote;
    if (error->domain == G_DBUS_ERROR || error->domain == SECRET_ERROR) return g_dbus_error_encode_gerror(error);
    return NULL;
}

#endif
