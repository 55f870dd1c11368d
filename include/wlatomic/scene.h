/*
 * Planes for wlr_scene compositors: one call instead of
 * wlr_scene_output_commit.
 *
 * wla_scene_output_commit describes what the scene shows on an output as
 * layers (wla_output_assign_layers, planes.h): every surface, buffer and
 * rectangle node, bottom to top. The surfaces and buffers the helper puts on
 * planes are scanned out from their own buffers: their nodes are disabled
 * so that the scene neither draws them nor sends them frame events, and the
 * helper sends those itself when the commit that carried their buffer is
 * presented, with zero-copy presentation feedback. When only what the
 * planes show changed, the last primary buffer is committed again instead
 * of rendering; while a screencopy client waits for the output, everything
 * is composited (screencopy copies the primary buffer only).
 *
 * Left composited: outputs that are scaled or transformed, surfaces with a
 * buffer transform, scale or viewport, buffers with a transform, nodes
 * partly off the output or also shown on another output, and everything on
 * an output that is not a wlatomic output.
 *
 * A node on a plane is disabled (node->state.enabled false) between
 * commits: the scene takes no damage from it. A compositor that moves or
 * restacks such a node asks the output for a frame
 * (wlr_output_schedule_frame), as it would for a change the scene cannot
 * see; one that wants the node hidden destroys it or disables one of its
 * parents. wla_scene_node_at finds nodes on planes as wlr_scene_node_at
 * finds the others.
 */
#ifndef WLATOMIC_SCENE_H
#define WLATOMIC_SCENE_H

#include <stdbool.h>

struct wlr_scene;
struct wlr_scene_node;
struct wlr_scene_output;
struct wlr_screencopy_manager_v1;

struct wla_scene;

/*
 * The helper for a scene. screencopy may be NULL (no screencopy manager:
 * nothing makes the helper composite everything). Presentation feedback
 * goes through the scene's presentation (wlr_scene_set_presentation), if
 * any. The helper is destroyed with the scene, or by wla_scene_destroy.
 * Returns NULL after an error line (NULL scene, out of memory).
 */
struct wla_scene *wla_scene_create(struct wlr_scene *scene,
	struct wlr_screencopy_manager_v1 *screencopy);

/* Gives every node on a plane back to the scene (enabled) and frees the
 * helper. The planes keep showing their buffers until the outputs' next
 * commits. NULL is a no-op. */
void wla_scene_destroy(struct wla_scene *wla_scene);

/*
 * Instead of wlr_scene_output_commit: assign the scene's nodes on this
 * output to its planes, render what is left (only what is damaged, as
 * wlr_scene_output_commit does) and commit. The compositor still calls
 * wlr_scene_output_send_frame_done afterwards for the composited surfaces.
 * On an output that is not a wlatomic output this is
 * wlr_scene_output_commit.
 *
 * Returns false if nothing could be committed: a commit the backend
 * refused, or a bad call (NULL, a scene output of another scene, a disabled
 * output: one line logged, nothing committed).
 */
bool wla_scene_output_commit(struct wla_scene *wla_scene,
	struct wlr_scene_output *scene_output);

/*
 * wlr_scene_node_at that also finds the nodes on planes (disabled in the
 * scene), in their place in the stacking order. Returns the node under
 * (lx, ly) in node's parent's coordinates, with the point in the node's
 * coordinates in nx, ny (either may be NULL); NULL if there is none.
 */
struct wlr_scene_node *wla_scene_node_at(struct wla_scene *wla_scene,
	struct wlr_scene_node *node, double lx, double ly, double *nx, double *ny);

#endif
